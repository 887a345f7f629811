package resources

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/sandgate/sandgate/auth/identity"
	"github.com/sandgate/sandgate/gateway/fleet"
	"github.com/sandgate/sandgate/gateway/mcpapi"
	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/sandbox"
)

// Sandbox files are resources named sandbox://<sandbox_id>/<path>. The
// path after the id's slash is the file's path relative to the
// workspace, so sandbox://<id>/src/main.go is /workspace/src/main.go and
// sandbox://<id>/ the workspace itself; an absolute path keeps its own
// slash, so sandbox://<id>//etc/hosts is /etc/hosts. Path segments are
// percent-encoded where a URI needs it (spaces, '%', '?', '#').
const (
	sandboxScheme   = "sandbox"
	sandboxTemplate = "sandbox://{sandbox_id}/{+path}"
	// auditURI is the caller's own most recent audit records.
	auditURI = "audit://me/recent"
)

// maxResourceBytes is the largest file resources/read returns whole; a
// bigger one is read in ranges with the read_file tool.
const maxResourceBytes = 4 << 20

// sandboxRef is a parsed sandbox:// URI.
type sandboxRef struct {
	sandboxID string
	path      string // relative to the workspace, or absolute; "" is the workspace
}

// parseSandboxURI parses uri as sandboxTemplate describes.
func parseSandboxURI(uri string) (sandboxRef, error) {
	rest, ok := strings.CutPrefix(uri, sandboxScheme+"://")
	if !ok {
		return sandboxRef{}, fmt.Errorf("%q is not a sandbox:// URI", uri)
	}
	id, raw, ok := strings.Cut(rest, "/")
	if !ok || id == "" {
		return sandboxRef{}, fmt.Errorf("%q names no sandbox: use sandbox://<sandbox_id>/<path>", uri)
	}
	p, err := url.PathUnescape(raw)
	if err != nil {
		return sandboxRef{}, fmt.Errorf("%q: bad percent-encoding in the path: %v", uri, err)
	}
	if strings.IndexByte(p, 0) >= 0 {
		return sandboxRef{}, fmt.Errorf("%q: a path holds no NUL byte", uri)
	}
	return sandboxRef{sandboxID: id, path: p}, nil
}

// sandboxURI is the resource URI of path (relative to the workspace, or
// absolute) in sandbox id.
func sandboxURI(id, path string) string {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return sandboxScheme + "://" + id + "/" + strings.Join(segs, "/")
}

// runnerPath is the path the runner resolves: "" is the workspace.
func (r sandboxRef) runnerPath() string {
	if r.path == "" {
		return "."
	}
	return r.path
}

// registerResources serves the resource template and the audit
// resource; the caller's list, completions and subscriptions reach the
// edge through its Config.Resources (resources_subscribe.go).
func (g *Service) registerResources(pub Publisher) {
	pub.AddResourceTemplate(mcpapi.ResourceTemplate{URITemplate: sandboxTemplate, Name: "Sandbox files",
		Title:       "Files of your sandboxes",
		Description: "A file or directory of one of your sandboxes. The path is relative to /workspace (sandbox://<id>/src/main.go); an absolute path keeps its slash (sandbox://<id>//etc/hosts). A directory reads as its listing. Files above 4 MiB must be read in ranges with read_file. Requires scope: sandbox:files:read."},
		g.readSandboxResource)
	pub.AddResource(mcpapi.Resource{URI: auditURI, Name: "Your recent audit records",
		Description: "Your own 100 most recent audit records, newest last, as JSON. Requires scope: sandbox:audit.",
		MIMEType:    "application/json"}, g.readAuditResource)
}

// caller returns the principal and legacy session of a request.
func caller(ctx context.Context) (identity.Identity, string, error) {
	p, ok := identity.From(ctx)
	if !ok {
		return identity.Identity{}, "", errors.New("no principal in request context") // wiring bug
	}
	return p, mcpapi.SessionFrom(ctx), nil
}

// resourceBox returns the sandbox of ref if the caller may use it, or a
// not-found error.
func (g *Service) resourceBox(ctx context.Context, p identity.Identity, session string, ref sandboxRef) (*fleet.Box, error) {
	b, err := g.boxes.Get(ctx, p, session, ref.sandboxID)
	if errors.Is(err, sandbox.ErrNotFound) {
		return nil, fmt.Errorf("%w: no sandbox %q of yours; list yours with resources/list", mcpapi.ErrResourceNotFound, ref.sandboxID)
	}
	return b, err
}

// runnerNotFound turns a runner's not-found error into the resource's.
func runnerNotFound(uri string, err error) error {
	if protocol.CodeOf(err) == protocol.CodeNotFound {
		return fmt.Errorf("%w: %s: %v", mcpapi.ErrResourceNotFound, uri, err)
	}
	return err
}
