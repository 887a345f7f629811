package files

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/sandgate/sandgate/runner/protocol"
)

// errSearchDone ends a search once a cap is reached; the result so far is
// returned with Truncated set.
var errSearchDone = errors.New("search cap reached")

// Search finds the lines that match a Go (RE2) regular expression in the
// files below req.Path (default: the workspace), or in req.Path alone
// when it is a file. Walking skips hidden directories, symlinks, binary
// files (a NUL byte in the first 8 KiB) and files above the per-file cap,
// and stops at the result, byte or file caps with Truncated set. Matches
// come in walk order: depth-first, each directory in lexical order.
func (s *Service) Search(ctx context.Context, req protocol.SearchRequest) (protocol.SearchResult, error) {
	root := s.opts.Workspace
	if req.Path != "" {
		var err error
		if root, err = s.resolve("search", req.Path); err != nil {
			return protocol.SearchResult{}, err
		}
	}
	sc, err := s.newSearcher(ctx, root, req)
	if err != nil {
		return protocol.SearchResult{}, err
	}
	fi, err := os.Stat(root)
	if err != nil {
		return protocol.SearchResult{}, s.fsError("search", root, err)
	}
	if fi.IsDir() {
		err = sc.walk(root, true)
	} else {
		err = sc.file(root, true)
	}
	if err != nil && !errors.Is(err, errSearchDone) {
		return protocol.SearchResult{}, s.fsError("search", root, err)
	}
	return sc.res, nil
}

// newSearcher checks the pattern, glob and caps of req.
func (s *Service) newSearcher(ctx context.Context, root string, req protocol.SearchRequest) (*searcher, error) {
	if req.Pattern == "" {
		return nil, protocol.Errorf(protocol.CodeInvalid,
			"search %s: pattern is empty; pass a Go regular expression, e.g. \"func \\\\w+\\\\(\"", root)
	}
	pattern := req.Pattern
	if req.IgnoreCase {
		pattern = "(?i)" + pattern
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeInvalid,
			"search %s: invalid pattern: %v; patterns use Go RE2 syntax, which has no lookaround or backreferences", root, err)
	}
	if err := checkGlob(root, req.Glob); err != nil {
		return nil, err
	}
	if req.MaxResults < 0 {
		return nil, protocol.Errorf(protocol.CodeInvalid,
			"search %s: max_results must not be negative; 0 means the default of %d", root, s.opts.MaxSearchResults)
	}
	maxResults := req.MaxResults
	if maxResults == 0 {
		maxResults = s.opts.MaxSearchResults
	}
	return &searcher{
		s:          s,
		ctx:        ctx,
		re:         re,
		glob:       req.Glob,
		maxResults: min(maxResults, hardMaxSearchResults),
		res:        protocol.SearchResult{Matches: []protocol.SearchMatch{}},
	}, nil
}

// checkGlob validates a base-name glob. A glob with "/" could never match
// a base name, so it is refused rather than silently finding nothing.
func checkGlob(root, glob string) error {
	if glob == "" {
		return nil
	}
	if _, err := path.Match(glob, ""); err != nil {
		return protocol.Errorf(protocol.CodeInvalid,
			"search %s: invalid glob %q: %v; globs look like \"*.go\" or \"test_*.py\"", root, glob, err)
	}
	if strings.Contains(glob, "/") {
		return protocol.Errorf(protocol.CodeInvalid,
			"search %s: glob %q contains \"/\", but globs match base names only; pass the directory as path and a glob such as \"*.go\"",
			root, glob)
	}
	return nil
}

// searcher holds the state of one Search.
type searcher struct {
	s          *Service
	ctx        context.Context
	re         *regexp.Regexp
	glob       string
	maxResults int

	res   protocol.SearchResult
	bytes int64        // total len of res.Matches[].Text
	buf   bytes.Buffer // reused for each file's content
}

// walk searches the files below dir. Symlinks are skipped so a link cannot
// lead the walk in circles or out of the tree; unreadable subdirectories
// are skipped, and only an unreadable root is an error.
func (sc *searcher) walk(dir string, root bool) error {
	if err := sc.ctx.Err(); err != nil {
		return err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		if root {
			return err
		}
		return nil
	}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		switch t := e.Type(); {
		case t.IsDir():
			if strings.HasPrefix(e.Name(), ".") {
				continue
			}
			err = sc.walk(p, false)
		case t.IsRegular():
			if sc.glob != "" {
				if ok, _ := path.Match(sc.glob, e.Name()); !ok {
					continue
				}
			}
			err = sc.file(p, false)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
