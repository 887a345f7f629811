package e2b

import (
	"context"
	"fmt"

	"connectrpc.com/connect"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/gateway/e2b/envd/filesystem"
	"github.com/sandgate/sandgate/runner/protocol"
)

// maxListEntries bounds one listing (and one watch): the runner's own
// default cap, named here so that a listing it cuts is an error rather
// than a silently short answer.
const maxListEntries = 10000

// ListDir lists a directory down to depth levels (0 counts as 1),
// hidden entries included, the directory itself not.
func (s *filesystemService) ListDir(ctx context.Context, req *connect.Request[filesystem.ListDirRequest]) (*connect.Response[filesystem.ListDirResponse], error) {
	path, depth := req.Msg.GetPath(), max(int(req.Msg.GetDepth()), 1)
	resp := &filesystem.ListDirResponse{}
	op := Op{Name: "filesystem.ListDir", Scope: auth.ScopeFilesRead, ReadOnly: true, Summary: map[string]any{"path": path, "depth": depth}}
	err := s.a.do(ctx, req.Header(), op, func(ctx context.Context, c *protocol.Client) error {
		l, err := listEntries(ctx, c, path, depth)
		if err != nil {
			return err
		}
		for _, f := range l.Entries {
			resp.Entries = append(resp.Entries, entryInfo(f))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(resp), nil
}

// listEntries lists path to depth, failing when the listing would exceed
// maxListEntries.
func listEntries(ctx context.Context, c *protocol.Client, path string, depth int) (protocol.ListResult, error) {
	var l protocol.ListResult
	req := protocol.ListRequest{Path: path, Depth: depth, Hidden: true, MaxEntries: maxListEntries}
	if err := c.Call(ctx, protocol.OpFileList, req, &l); err != nil {
		return l, err
	}
	if l.Truncated {
		return l, fmt.Errorf("%s holds more than %d entries to depth %d, more than one listing or watch covers; name a subdirectory or a smaller depth: %w",
			l.Path, maxListEntries, depth, ErrQuota)
	}
	return l, nil
}
