package e2b

import (
	"context"
	"io/fs"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/gateway/e2b/envd/filesystem"
	"github.com/sandgate/sandgate/runner/protocol"
)

// filesystemService is envd's filesystem service on the runner's file
// operations (file.stat, .list, .mkdir, .move, .remove). Watching uses
// the runner's watch operation where it reports changes by name
// (eventWatch), and polls listings (poller) on older runners.
type filesystemService struct {
	a        *API
	watchers *watcherSet
}

// entryOwner is what EntryInfo says for owner and group. The runner
// reports no owners, and every file a sandbox's code can create belongs
// to the one sandbox user, which E2B's SDKs know as "user".
const entryOwner = "user"

// entryInfo describes f as envd does: mode is the number Go's
// os.FileMode has (type bits and permissions), permissions its text
// ("-rw-r--r--", "drwxr-xr-x"), because envd sends exactly those.
func entryInfo(f protocol.FileInfo) *filesystem.EntryInfo {
	mode := fileMode(f)
	e := &filesystem.EntryInfo{
		Name:         f.Name,
		Type:         fileTypes[f.Type], // other kinds: FILE_TYPE_UNSPECIFIED, which the SDKs skip
		Path:         f.Path,
		Size:         f.Size,
		Mode:         uint32(mode),
		Permissions:  mode.String(),
		Owner:        entryOwner,
		Group:        entryOwner,
		ModifiedTime: timestamppb.New(f.ModTime),
	}
	if f.Type == protocol.TypeSymlink {
		e.SymlinkTarget = &f.Target
	}
	return e
}

var fileTypes = map[string]filesystem.FileType{
	protocol.TypeFile:    filesystem.FileType_FILE_TYPE_FILE,
	protocol.TypeDir:     filesystem.FileType_FILE_TYPE_DIRECTORY,
	protocol.TypeSymlink: filesystem.FileType_FILE_TYPE_SYMLINK,
}

// fileMode rebuilds Go's fs.FileMode from the runner's Unix permission
// bits (special bits included) and type.
func fileMode(f protocol.FileInfo) fs.FileMode {
	m := fs.FileMode(f.Perm) & fs.ModePerm
	for bit, mode := range map[uint32]fs.FileMode{0o4000: fs.ModeSetuid, 0o2000: fs.ModeSetgid, 0o1000: fs.ModeSticky} {
		if f.Perm&bit != 0 {
			m |= mode
		}
	}
	switch f.Type {
	case protocol.TypeDir:
		m |= fs.ModeDir
	case protocol.TypeSymlink:
		m |= fs.ModeSymlink
	case protocol.TypeOther:
		m |= fs.ModeIrregular
	}
	return m
}

// statEntry describes path, not following a final symlink.
func statEntry(ctx context.Context, c *protocol.Client, path string) (protocol.FileInfo, error) {
	var f protocol.FileInfo
	err := c.Call(ctx, protocol.OpFileStat, protocol.PathRequest{Path: path}, &f)
	return f, err
}

// Stat describes one entry.
func (s *filesystemService) Stat(ctx context.Context, req *connect.Request[filesystem.StatRequest]) (*connect.Response[filesystem.StatResponse], error) {
	path := req.Msg.GetPath()
	resp := &filesystem.StatResponse{}
	op := Op{Name: "filesystem.Stat", Scope: auth.ScopeFilesRead, ReadOnly: true, Summary: map[string]any{"path": path}}
	err := s.a.do(ctx, req.Header(), op, func(ctx context.Context, c *protocol.Client) error {
		f, err := statEntry(ctx, c, path)
		if err != nil {
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
