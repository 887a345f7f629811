package codesearch

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sandgate/sandgate/runner/protocol"
)

const (
	// maxStructuralMatches is how many matches are read from ast-grep
	// before it is stopped; they are sorted by place and the first
	// limit returned, so the answer does not depend on its thread order
	// unless this many match.
	maxStructuralMatches = 1000
	// maxMatchJSON bounds one line of ast-grep's output (a match carries
	// the matched text, a whole function for a function pattern).
	maxMatchJSON = 4 << 20
	maxStderr    = 8 << 10
	// astGrepImageDir is where sandgate/base installs ast-grep
	// (images/base/install.sh); looked at when PATH lacks it.
	astGrepImageDir = "/usr/local/bin"
)

// MissingAstGrep is the Unavailable text of a sandbox without ast-grep.
const MissingAstGrep = "ast-grep is not installed in this sandbox's image, so structural search cannot run; " +
	"the sandgate/base image has it (/usr/local/bin/ast-grep, installed by images/base/install.sh): " +
	"use that image or one built FROM it. The other strategies still answered."

// sgMatch is the part of one ast-grep --json=stream record used here.
type sgMatch struct {
	File  string `json:"file"`
	Lines string `json:"lines"`
	Range struct {
		Start struct {
			Line int `json:"line"` // 0-based
		} `json:"start"`
		End struct {
			Line int `json:"line"`
		} `json:"end"`
	} `json:"range"`
	MetaVariables struct {
		Single map[string]struct {
			Text string `json:"text"`
		} `json:"single"`
	} `json:"metaVariables"`
}

// structural matches req.Query as an ast-grep pattern below root, in
// req.Lang or, when empty, in the language of each file.
func (s *Service) structural(ctx context.Context, root string, req protocol.CodeSearchRequest, limit int) (protocol.CodeSearchResult, error) {
	res := protocol.CodeSearchResult{Strategy: protocol.StrategyStructural, Hits: []protocol.CodeHit{}}
	bin, ok := s.astGrep()
	if !ok {
		res.Unavailable = MissingAstGrep
		return res, nil
	}
	args := []string{"run", "--pattern", req.Query, "--json=stream", "--color=never"}
	if req.Lang != "" {
		args = append(args, "--lang", req.Lang)
	}
	if req.Glob != "" {
		args = append(args, "--globs", req.Glob)
	}
	args = append(args, "--", root)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = root
	if fi, err := os.Stat(root); err == nil && !fi.IsDir() {
		cmd.Dir = filepath.Dir(root)
	}
	var stderr capped
	stderr.max = maxStderr
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return res, fmt.Errorf("run ast-grep: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return res, fmt.Errorf("run ast-grep: %w", err)
	}
	matches, readErr := readMatches(out, &res)
	if res.Truncated {
		cancel() // enough read: stop it rather than wait
	}
	_, _ = io.Copy(io.Discard, out)
	waitErr := cmd.Wait()
	switch {
	case ctx.Err() != nil && !res.Truncated:
		res.Truncated = true // the deadline: what was read so far
	case readErr != nil:
		return res, fmt.Errorf("read ast-grep output: %w", readErr)
	case waitErr != nil && !res.Truncated:
		var exit *exec.ExitError
		// Status 1 is "no match", like grep's.
		if !errors.As(waitErr, &exit) || exit.ExitCode() != 1 {
			return res, protocol.Errorf(protocol.CodeInvalid, "structural search: ast-grep: %s", firstLine(stderr.String(), waitErr))
		}
	}
	if strings.Contains(stderr.String(), "ERROR node") {
		res.Note = "the pattern does not parse as code in every language searched; a structural pattern is code in the target language with $NAME and $$$ metavariables, e.g. \"func $NAME($$$) error\" (pass lang to pick one)"
	}
	res.Hits = place(matches, limit, &res)
	return res, nil
}

// astGrep finds the ast-grep binary.
func (s *Service) astGrep() (string, bool) {
	if p, err := exec.LookPath(s.opts.AstGrep); err == nil {
		return p, true
	}
	if filepath.Base(s.opts.AstGrep) == s.opts.AstGrep {
		p := filepath.Join(astGrepImageDir, s.opts.AstGrep)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, true
		}
	}
	return "", false
}

// readMatches decodes ast-grep's stream until its end or the match cap.
func readMatches(r io.Reader, res *protocol.CodeSearchResult) ([]sgMatch, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxMatchJSON)
	var out []sgMatch
	for sc.Scan() {
		var m sgMatch
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return out, err
		}
		if len(out) == maxStructuralMatches {
			res.Truncated = true
			return out, nil
		}
		out = append(out, m)
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		res.Truncated = true // one match bigger than the cap: keep the rest
		return out, nil
	}
	return out, sc.Err()
}

// place sorts matches by file and line and returns the first limit.
func place(ms []sgMatch, limit int, res *protocol.CodeSearchResult) []protocol.CodeHit {
	slices.SortFunc(ms, func(a, b sgMatch) int {
		if c := strings.Compare(a.File, b.File); c != 0 {
			return c
		}
		return a.Range.Start.Line - b.Range.Start.Line
	})
	hits := []protocol.CodeHit{}
	for _, m := range ms {
		if len(hits) == limit {
			res.Truncated = true
			continue
		}
		h := protocol.CodeHit{Path: m.File, Line: m.Range.Start.Line + 1, Text: cutText(m.Lines)}
		if m.Range.End.Line > m.Range.Start.Line {
			h.EndLine = m.Range.End.Line + 1
		}
		if n, ok := m.MetaVariables.Single["NAME"]; ok {
			h.Symbol = n.Text
		}
		hits = append(hits, h)
	}
	return hits
}

// capped keeps the first max bytes written to it.
type capped struct {
	bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.Len(); room > 0 {
		c.Buffer.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// firstLine is the first non-empty line of ast-grep's stderr, or err.
func firstLine(stderr string, err error) string {
	for _, l := range strings.Split(stderr, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return err.Error()
}
