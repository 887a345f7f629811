package codesearch

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/sandgate/sandgate/runner/protocol"
)

// Defaults for the zero fields of Options.
const (
	defaultWorkspace    = "/workspace"
	defaultMaxFiles     = 20000
	defaultMaxFileBytes = 1 << 20
	defaultMaxBytes     = 64 << 20
	defaultAstGrep      = "ast-grep"
	// maxLineText cuts a hit's text, as file.search cuts its lines.
	maxLineText = 300
)

// Options configures a Service. A zero field takes the default named in
// its comment.
type Options struct {
	// Workspace is what relative paths resolve against; default
	// "/workspace".
	Workspace string
	// MaxFiles stops the lexical scan after this many source files;
	// default 20000.
	MaxFiles int
	// MaxFileBytes: larger files are skipped (generated or minified code
	// is rarely what a query is after); default 1 MiB.
	MaxFileBytes int64
	// MaxBytes stops the lexical scan after reading this many bytes in
	// all; default 64 MiB.
	MaxBytes int64
	// AstGrep is the ast-grep binary, a name looked up on PATH (and in
	// /usr/local/bin, where sandgate/base installs it) or a path; default
	// "ast-grep". Not "sg": on Debian that is newgrp.
	AstGrep string
}

// Service runs code searches. It holds only its configuration, so one
// Service is safe for concurrent use.
type Service struct {
	opts Options
}

// New returns a Service with opts, zero fields set to their defaults.
func New(opts Options) *Service {
	if opts.Workspace == "" {
		opts.Workspace = defaultWorkspace
	}
	if opts.MaxFiles <= 0 {
		opts.MaxFiles = defaultMaxFiles
	}
	if opts.MaxFileBytes <= 0 {
		opts.MaxFileBytes = defaultMaxFileBytes
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = defaultMaxBytes
	}
	if opts.AstGrep == "" {
		opts.AstGrep = defaultAstGrep
	}
	return &Service{opts: opts}
}

// Search runs req's strategy, lexical or structural, below req.Path. The
// search stops at protocol.CodeSearchRunnerTimeout even if ctx allows
// more.
func (s *Service) Search(ctx context.Context, req protocol.CodeSearchRequest) (protocol.CodeSearchResult, error) {
	if strings.TrimSpace(req.Query) == "" {
		return protocol.CodeSearchResult{}, protocol.Errorf(protocol.CodeInvalid,
			"code search: query is empty; pass words, an identifier or a code pattern")
	}
	root := s.opts.Workspace
	if req.Path != "" {
		if strings.IndexByte(req.Path, 0) >= 0 {
			return protocol.CodeSearchResult{}, protocol.Errorf(protocol.CodeInvalid, "code search %q: path contains a NUL byte; remove it", req.Path)
		}
		root = req.Path
		if !filepath.IsAbs(root) {
			root = filepath.Join(s.opts.Workspace, root)
		}
	}
	root = filepath.Clean(root)
	if _, err := os.Stat(root); err != nil {
		return protocol.CodeSearchResult{}, protocol.Errorf(protocol.CodeNotFound,
			"code search %s: %v; pass a directory or file below the workspace %s", root, err, s.opts.Workspace)
	}
	if req.Glob != "" {
		if _, err := filepath.Match(req.Glob, ""); err != nil || strings.Contains(req.Glob, "/") {
			return protocol.CodeSearchResult{}, protocol.Errorf(protocol.CodeInvalid,
				"code search: invalid glob %q; globs match base names, e.g. \"*.go\"", req.Glob)
		}
	}
	limit := req.MaxResults
	if limit <= 0 || limit > protocol.CodeSearchMaxResults {
		limit = min(max(limit, protocol.CodeSearchDefaultResults), protocol.CodeSearchMaxResults)
	}
	ctx, cancel := context.WithTimeout(ctx, protocol.CodeSearchRunnerTimeout)
	defer cancel()
	switch req.Strategy {
	case protocol.StrategyLexical:
		return s.lexical(ctx, root, req.Query, req.Glob, limit)
	case protocol.StrategyStructural:
		return s.structural(ctx, root, req, limit)
	}
	return protocol.CodeSearchResult{}, protocol.Errorf(protocol.CodeInvalid,
		"code search: the runner runs the %q and %q strategies, not %q", protocol.StrategyLexical, protocol.StrategyStructural, req.Strategy)
}

// cutText returns the first line of s, at most maxLineText bytes, valid
// UTF-8.
func cutText(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimRight(s, "\r")
	if len(s) > maxLineText {
		s = s[:maxLineText] + "…"
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
