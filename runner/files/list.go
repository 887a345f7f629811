package files

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/sandgate/sandgate/runner/protocol"
)

// errListFull ends a walk once the entry cap is reached.
var errListFull = errors.New("list is full")

// List returns the entries below a directory, depth-first with each
// directory's entries in lexical order, down to req.Depth levels (default
// 1, at most 20). Symlinks are reported, never followed, so a link to a
// parent cannot make the walk loop. Subdirectories that cannot be read are
// listed but not descended into.
func (s *Service) List(ctx context.Context, req protocol.ListRequest) (protocol.ListResult, error) {
	p, err := s.resolve("list", req.Path)
	if err != nil {
		return protocol.ListResult{}, err
	}
	if req.Depth < 0 || req.MaxEntries < 0 {
		return protocol.ListResult{}, protocol.Errorf(protocol.CodeInvalid,
			"list %s: depth and max_entries must not be negative; depth 1 lists the directory's own entries", p)
	}
	depth := req.Depth
	if depth == 0 {
		depth = 1
	}
	// The root itself is followed when it is a symlink: the caller named
	// it and wants what it points at.
	fi, err := os.Stat(p)
	if err != nil {
		return protocol.ListResult{}, s.fsError("list", p, err)
	}
	if !fi.IsDir() {
		return protocol.ListResult{}, protocol.Errorf(protocol.CodeNotDir,
			"list %s: is a file, not a directory; read it instead, or list its directory %s", p, filepath.Dir(p))
	}
	l := &lister{
		ctx:     ctx,
		hidden:  req.Hidden,
		limit:   capAt(req.MaxEntries, s.opts.MaxListEntries),
		entries: []protocol.FileInfo{},
	}
	err = l.walk(p, min(depth, maxListDepth), true)
	switch {
	case errors.Is(err, errListFull):
		return protocol.ListResult{Path: p, Entries: l.entries, Truncated: true}, nil
	case err != nil:
		return protocol.ListResult{}, s.fsError("list", p, err)
	}
	return protocol.ListResult{Path: p, Entries: l.entries}, nil
}

// lister holds the state of one List walk.
type lister struct {
	ctx     context.Context
	hidden  bool
	limit   int
	entries []protocol.FileInfo
}

// walk appends the entries of dir and, while depth allows, of its
// subdirectories. Only an unreadable root is an error.
func (l *lister) walk(dir string, depth int, root bool) error {
	if err := l.ctx.Err(); err != nil {
		return err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		if root {
			return err
		}
		// One unreadable corner should not fail the whole listing; its
		// parent already listed it, so the user can see it is there.
		return nil
	}
	for _, e := range ents {
		if !l.hidden && strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if len(l.entries) >= l.limit {
			return errListFull
		}
		info, err := e.Info()
		if err != nil {
			continue // removed since ReadDir; it is no longer an entry
		}
		path := filepath.Join(dir, e.Name())
		l.entries = append(l.entries, fileInfo(path, info))
		if e.IsDir() && depth > 1 {
			if err := l.walk(path, depth-1, false); err != nil {
				return err
			}
		}
	}
	return nil
}
