package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sandgate/sandgate/auth/identity"
	"github.com/sandgate/sandgate/gateway/fleet"
	"github.com/sandgate/sandgate/gateway/mcpedge"
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

// errResourceNotFound is every resource the caller cannot have: a
// missing file, and a sandbox that is not theirs (which must look the
// same). resourceErrors gives it the spec's error code.
var errResourceNotFound = errors.New("resource not found")

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

// registerResources adds the resource template, the audit resource, the
// resources/list hook and the subscription hooks to the MCP server.
func (g *Server) registerResources(hooks *server.Hooks) {
	g.mcp.AddResourceTemplate(mcp.NewResourceTemplate(sandboxTemplate, "Sandbox files",
		mcp.WithTemplateTitle("Files of your sandboxes"),
		mcp.WithTemplateDescription("A file or directory of one of your sandboxes. The path is relative to /workspace (sandbox://<id>/src/main.go); an absolute path keeps its slash (sandbox://<id>//etc/hosts). A directory reads as its listing. Files above 4 MiB must be read in ranges with read_file. Requires scope: sandbox:files:read.")),
		g.readSandboxResource)
	g.mcp.AddResource(mcp.NewResource(auditURI, "Your recent audit records",
		mcp.WithResourceDescription("Your own 100 most recent audit records, newest last, as JSON. Requires scope: sandbox:audit."),
		mcp.WithMIMEType("application/json")), g.readAuditResource)
	hooks.AddAfterListResources(g.listResources)
	g.registerSubscriptions(hooks)
}

// caller returns the principal and legacy session of a request.
func caller(ctx context.Context) (identity.Identity, string, error) {
	p, ok := identity.From(ctx)
	if !ok {
		return identity.Identity{}, "", errors.New("no principal in request context") // wiring bug
	}
	return p, mcpedge.SessionFrom(ctx), nil
}

// resourceBox returns the sandbox of ref if the caller may use it, and
// marks the request's error as not-found otherwise.
func (g *Server) resourceBox(ctx context.Context, p identity.Identity, session string, ref sandboxRef) (*fleet.Box, error) {
	b, err := g.boxes.Get(ctx, p, session, ref.sandboxID)
	if errors.Is(err, sandbox.ErrNotFound) {
		return nil, notFound(ctx, fmt.Errorf("%w: no sandbox %q of yours; list yours with resources/list", errResourceNotFound, ref.sandboxID))
	}
	return b, err
}

// runnerNotFound turns a runner's not-found error into the resource's.
func runnerNotFound(ctx context.Context, uri string, err error) error {
	if protocol.CodeOf(err) == protocol.CodeNotFound {
		return notFound(ctx, fmt.Errorf("%w: %s: %v", errResourceNotFound, uri, err))
	}
	return err
}
