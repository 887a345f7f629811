package resources

import (
	"cmp"
	"context"
	"encoding/base64"
	"fmt"
	"mime"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/identity"
	"github.com/sandgate/sandgate/gateway/fleet"
	"github.com/sandgate/sandgate/gateway/mcpapi"
	"github.com/sandgate/sandgate/runner/protocol"
)

// What resources/list shows of each of the caller's sandboxes: the
// workspace, its top-level entries and its most recently changed files,
// a page at a time.
const (
	listTopEntries  = 200
	listRecentFiles = 20
	listRecentDepth = 4
	listRecentScan  = 2000 // entries scanned for the recent files
	listPageSize    = 50
)

// List is resources/list: what the caller may read, the audit
// resource with sandbox:audit, and with sandbox:files:read each usable
// sandbox's workspace, top level and recently changed files. The cursor
// is an offset into that list; a list that changes between pages may
// repeat or skip an entry.
func (g *Service) List(ctx context.Context, cursor string) (page []mcpapi.Resource, next string, err error) {
	p, session, err := caller(ctx)
	if err != nil {
		return nil, "", err
	}
	var all []mcpapi.Resource
	if slices.Contains(p.Scopes, auth.ScopeAudit) {
		all = append(all, mcpapi.Resource{URI: auditURI, Name: "Your recent audit records", MIMEType: "application/json"})
	}
	if slices.Contains(p.Scopes, auth.ScopeFilesRead) {
		for _, b := range g.callerBoxes(p, session) {
			rs, err := g.sandboxResources(ctx, p, session, b)
			if err != nil {
				g.log.Warn("list sandbox resources", "sandbox_id", b.ID(), "error", err)
				continue
			}
			all = append(all, rs...)
		}
	}
	start := cursorOffset(cursor)
	page = all[min(start, len(all)):min(start+listPageSize, len(all))]
	if start+listPageSize < len(all) {
		next = offsetCursor(start + listPageSize)
	}
	return page, next, nil
}

// callerBoxes are the sandboxes the caller may use from this session
// (its own sessionless ones and this legacy session's), by id.
func (g *Service) callerBoxes(p identity.Identity, session string) []*fleet.Box {
	bs := g.boxes.Matching(func(b *fleet.Box) bool { return fleet.Allows(b.Owner, b.Session, p, session) })
	slices.SortFunc(bs, func(a, b *fleet.Box) int { return cmp.Compare(a.ID(), b.ID()) })
	return bs
}

// sandboxResources lists one sandbox's resources, audited as
// "resources/list".
func (g *Service) sandboxResources(ctx context.Context, p identity.Identity, session string, b *fleet.Box) ([]mcpapi.Resource, error) {
	short := b.ID()[:min(8, len(b.ID()))]
	out := []mcpapi.Resource{{URI: sandboxURI(b.ID(), ""), Name: "sandbox " + short + " workspace",
		Description: "The /workspace directory of sandbox " + b.ID() + "; reads as its listing.", MIMEType: mimeDirectory}}
	err := g.tools.RunReadOnly(ctx, p, session, b, "resources/list", nil, func(ctx context.Context, rc *protocol.Client) error {
		var top, deep protocol.ListResult
		if err := rc.Call(ctx, protocol.OpFileList, protocol.ListRequest{Path: ".", MaxEntries: listTopEntries}, &top); err != nil {
			return err
		}
		if err := rc.Call(ctx, protocol.OpFileList, protocol.ListRequest{Path: ".", Depth: listRecentDepth, MaxEntries: listRecentScan}, &deep); err != nil {
			return err
		}
		seen := map[string]bool{}
		for _, e := range top.Entries {
			out = append(out, fileResource(b.ID(), short, relTo(top.Path, e.Path), e))
			seen[e.Path] = true
		}
		for _, e := range recentFiles(deep.Entries, seen) {
			out = append(out, fileResource(b.ID(), short, relTo(deep.Path, e.Path), e))
		}
		return nil
	})
	return out, err
}

// recentFiles are the most recently modified regular files not in seen.
func recentFiles(entries []protocol.FileInfo, seen map[string]bool) []protocol.FileInfo {
	var files []protocol.FileInfo
	for _, e := range entries {
		if e.Type == protocol.TypeFile && !seen[e.Path] {
			files = append(files, e)
		}
	}
	slices.SortFunc(files, func(a, b protocol.FileInfo) int { return b.ModTime.Compare(a.ModTime) })
	return files[:min(listRecentFiles, len(files))]
}

// relTo is path relative to the workspace root (as the runner resolved
// it), or path itself when it lies outside.
func relTo(root, path string) string {
	if rel, err := filepath.Rel(root, path); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}

// fileResource describes one entry of sandbox id as a resource.
func fileResource(id, short, rel string, e protocol.FileInfo) mcpapi.Resource {
	r := mcpapi.Resource{URI: sandboxURI(id, rel), Name: rel, Description: fmt.Sprintf("%s in sandbox %s", e.Type, short)}
	r.Title = rel + " (sandbox " + short + ")"
	if e.Type == protocol.TypeDir {
		r.MIMEType = mimeDirectory
	} else {
		size := e.Size
		r.Size = &size
		if t, ok := sourceTypes[strings.ToLower(filepath.Ext(rel))]; ok {
			r.MIMEType = t
		} else {
			r.MIMEType = mime.TypeByExtension(filepath.Ext(rel))
		}
	}
	r.LastModified = e.ModTime.UTC().Format(time.RFC3339)
	return r
}

// The cursor is the offset, base64-encoded as MCP clients expect a
// cursor to be (mcp-go decodes one before the list hook runs).
func offsetCursor(n int) string {
	return base64.StdEncoding.EncodeToString([]byte("offset:" + strconv.Itoa(n)))
}

func cursorOffset(c string) int {
	b, err := base64.StdEncoding.DecodeString(string(c))
	if err != nil {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimPrefix(string(b), "offset:"))
	if err != nil || n < 0 {
		return 0
	}
	return n
}
