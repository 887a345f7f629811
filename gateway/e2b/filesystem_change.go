package e2b

import (
	"context"
	"fmt"

	"connectrpc.com/connect"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/gateway/e2b/envd/filesystem"
	"github.com/sandgate/sandgate/runner/protocol"
)

// MakeDir creates a directory and its parents. Unlike the runner's
// mkdir -p, an existing directory is AlreadyExists, as envd answers it
// (the SDKs' makeDir then returns false).
func (s *filesystemService) MakeDir(ctx context.Context, req *connect.Request[filesystem.MakeDirRequest]) (*connect.Response[filesystem.MakeDirResponse], error) {
	path := req.Msg.GetPath()
	resp := &filesystem.MakeDirResponse{}
	op := Op{Name: "filesystem.MakeDir", Scope: auth.ScopeFilesWrite, Summary: map[string]any{"path": path}}
	err := s.a.do(ctx, req.Header(), op, func(ctx context.Context, c *protocol.Client) error {
		if f, err := statEntry(ctx, c, path); err == nil {
			return mkdirExisting(f)
		} else if protocol.CodeOf(err) != protocol.CodeNotFound {
			return err
		}
		var f protocol.FileInfo
		if err := c.Call(ctx, protocol.OpFileMkdir, protocol.MkdirRequest{Path: path}, &f); err != nil {
			return err
		}
		resp.Entry = entryInfo(f)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(resp), nil
}

// mkdirExisting is MakeDir's answer for a path that is already there.
func mkdirExisting(f protocol.FileInfo) error {
	if f.Type == protocol.TypeDir {
		return connect.NewError(connect.CodeAlreadyExists, fmt.Errorf("directory %s already exists", f.Path))
	}
	return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("%s already exists and is a %s, not a directory; choose another path or remove it first", f.Path, f.Type))
}

// Move renames an entry, replacing what is at the destination as
// envd's rename does, and creating the destination's parents.
func (s *filesystemService) Move(ctx context.Context, req *connect.Request[filesystem.MoveRequest]) (*connect.Response[filesystem.MoveResponse], error) {
	from, to := req.Msg.GetSource(), req.Msg.GetDestination()
	resp := &filesystem.MoveResponse{}
	op := Op{Name: "filesystem.Move", Scope: auth.ScopeFilesWrite, Summary: map[string]any{"path": from, "destination": to}}
	err := s.a.do(ctx, req.Header(), op, func(ctx context.Context, c *protocol.Client) error {
		var f protocol.FileInfo
		if err := c.Call(ctx, protocol.OpFileMove, protocol.MoveRequest{From: from, To: to, Overwrite: true}, &f); err != nil {
			return err
		}
		resp.Entry = entryInfo(f)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(resp), nil
}

// Remove removes an entry and, for a directory, all it holds. A path
// that does not exist is not an error, as with envd's os.RemoveAll.
func (s *filesystemService) Remove(ctx context.Context, req *connect.Request[filesystem.RemoveRequest]) (*connect.Response[filesystem.RemoveResponse], error) {
	path := req.Msg.GetPath()
	op := Op{Name: "filesystem.Remove", Scope: auth.ScopeFilesWrite, Summary: map[string]any{"path": path}}
	err := s.a.do(ctx, req.Header(), op, func(ctx context.Context, c *protocol.Client) error {
		err := c.Call(ctx, protocol.OpFileRemove, protocol.RemoveRequest{Path: path, Recursive: true}, nil)
		if protocol.CodeOf(err) == protocol.CodeNotFound {
			return nil
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&filesystem.RemoveResponse{}), nil
}
