package resources

import (
	"cmp"
	"context"
	"errors"
	"path"
	"slices"
	"strings"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/identity"
	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/gateway/fleet"
	"github.com/sandgate/sandgate/gateway/mcpapi"
	"github.com/sandgate/sandgate/runner/protocol"
)

// maxCompletions is the spec's bound on the values of one completion.
const maxCompletions = 100

// toolCompletion is the audit records' tool name for a completion that
// lists a sandbox's files.
const toolCompletion = "completion/complete"

// Complete completes the sandbox template's arguments:
// sandbox_id from the caller's sandboxes, path from the sandbox's tree.
func (g *Service) Complete(ctx context.Context, req mcpapi.CompleteRequest) (*mcpapi.Completion, error) {
	if req.Ref != sandboxTemplate {
		return &mcpapi.Completion{Values: []string{}}, nil
	}
	switch req.Argument {
	case "sandbox_id":
		return g.completeSandboxID(ctx, req.Value)
	case "path":
		return g.completePath(ctx, req.Context["sandbox_id"], req.Value)
	}
	return &mcpapi.Completion{Values: []string{}}, nil
}

// completeSandboxID lists the caller's sandbox ids starting with prefix.
func (g *Service) completeSandboxID(ctx context.Context, prefix string) (*mcpapi.Completion, error) {
	p, session, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, b := range g.callerBoxes(p, session) {
		if strings.HasPrefix(b.ID(), prefix) {
			ids = append(ids, b.ID())
		}
	}
	return completion(ids), nil
}

// defaultBox is the sandbox a completion or prompt means when it names
// none: the legacy session's own sandbox if it has one yet, or else the
// caller's only sandbox. It never creates one.
func (g *Service) defaultBox(ctx context.Context, p identity.Identity, session, id string) (*fleet.Box, error) {
	if id != "" {
		return g.boxes.Get(ctx, p, session, id)
	}
	bs := g.callerBoxes(p, session)
	for _, b := range bs {
		if session != "" && b.Session == session {
			return b, nil
		}
	}
	if len(bs) == 1 {
		return bs[0], nil
	}
	return nil, errors.New("no sandbox chosen: pass sandbox_id")
}

// completePath lists the entries of value's directory in the sandbox
// whose names start with value's last element; directories end in "/".
// Like resources/list it needs sandbox:files:read and is audited.
func (g *Service) completePath(ctx context.Context, sandboxID, value string) (*mcpapi.Completion, error) {
	p, session, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(p.Scopes, auth.ScopeFilesRead) {
		return completion(nil), nil
	}
	b, err := g.defaultBox(ctx, p, session, sandboxID)
	if err != nil {
		return completion(nil), nil // nothing to complete from; not an error worth showing
	}
	dir, prefix := "", value
	if i := strings.LastIndexByte(value, '/'); i >= 0 {
		dir, prefix = value[:i+1], value[i+1:]
	}
	var names []string
	err = g.tools.RunReadOnly(ctx, p, session, b, toolCompletion, map[string]string{"path": audit.Clip(value, 200)}, func(ctx context.Context, rc *protocol.Client) error {
		var l protocol.ListResult
		listPath := cmp.Or(strings.TrimSuffix(dir, "/"), ".")
		if dir == "/" {
			listPath = "/"
		}
		if err := rc.Call(ctx, protocol.OpFileList, protocol.ListRequest{Path: listPath, Hidden: strings.HasPrefix(prefix, "."), MaxEntries: 1000}, &l); err != nil {
			return err
		}
		for _, e := range l.Entries {
			name := path.Base(e.Path)
			if !strings.HasPrefix(name, prefix) {
				continue
			}
			if e.Type == protocol.TypeDir {
				name += "/"
			}
			names = append(names, dir+name)
		}
		return nil
	})
	if protocol.CodeOf(err) == protocol.CodeNotFound || protocol.CodeOf(err) == protocol.CodeNotDir {
		return completion(nil), nil // a path that leads nowhere has no completions
	}
	if err != nil {
		return nil, err
	}
	return completion(names), nil
}

// completion bounds values to the spec's 100 and says how many there were.
func completion(values []string) *mcpapi.Completion {
	slices.Sort(values)
	c := &mcpapi.Completion{Values: values[:min(len(values), maxCompletions)], Total: len(values), HasMore: len(values) > maxCompletions}
	if c.Values == nil {
		c.Values = []string{}
	}
	return c
}
