package mcpapi

import (
	"context"
	"errors"
)

// The notifications a resource subscription sends.
const (
	MethodResourceUpdated      = "notifications/resources/updated"
	MethodResourcesListChanged = "notifications/resources/list_changed"
)

// Notify sends one notification to a subscriber's client.
type Notify func(method string, params map[string]any)

// Resource is one entry of resources/list.
type Resource struct {
	URI         string
	Name        string
	Title       string
	Description string
	MIMEType    string
	// Size is the contents' length in bytes, when known.
	Size *int64
	// LastModified is an RFC 3339 time, or "".
	LastModified string
}

// ResourceTemplate is one entry of resources/templates/list.
type ResourceTemplate struct {
	URITemplate string
	Name        string
	Title       string
	Description string
}

// ResourceHandler reads the resource uri (for a template, any URI it
// matches).
type ResourceHandler func(ctx context.Context, uri string) ([]ResourceContents, error)

// ErrResourceNotFound marks, when an error wraps it, a resource the
// caller cannot have (a missing file, and a sandbox that is not theirs,
// which must look the same): the edge answers it with the specification's
// resource-not-found error (whose code depends on the protocol era)
// rather than an internal error.
var ErrResourceNotFound = errors.New("resource not found")

// Completion is the answer of completion/complete.
type Completion struct {
	Values  []string // at most 100
	Total   int      // how many values there are in all, when known
	HasMore bool
}

// CompleteRequest is one completion/complete: of the argument Argument
// of the resource template or prompt Ref, whose value so far is Value;
// Context holds the other arguments' values the client has.
type CompleteRequest struct {
	Ref      string
	Argument string
	Value    string
	Context  map[string]string
}

// Completer answers completion/complete for a resource template's or a
// prompt's arguments.
type Completer func(ctx context.Context, req CompleteRequest) (*Completion, error)
