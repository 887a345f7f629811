package codesearch

import (
	"context"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

	"github.com/sandgate/sandgate/runner/protocol"
)

// BM25 parameters (the usual ones) and the field weights of BM25F: a
// term in a definition's name counts nameWeight times, one in the file's
// path pathWeight times, on top of its count in the body.
const (
	bm25K1     = 1.2
	bm25B      = 0.75
	nameWeight = 3
	pathWeight = 1
	// exactBoost multiplies the score of a definition the query names
	// exactly (MaxFrameBytes, Service.Search).
	exactBoost = 2
)

// skipDirs are dependency and build trees: they hold other people's code
// in bulk, which would crowd out the project's own.
var skipDirs = wordSet(`node_modules vendor __pycache__ dist build target venv site-packages`)

// doc is one indexed chunk with the counts BM25 needs: only the query's
// terms are counted, since only they are scored.
type doc struct {
	path  string
	c     chunk
	tf    map[string]float64 // weighted, per query term
	terms int                // body length in terms
}

var errScanDone = errors.New("scan cap reached")

// lexical ranks the definitions below root for query by BM25F.
func (s *Service) lexical(ctx context.Context, root, query, glob string, limit int) (protocol.CodeSearchResult, error) {
	res := protocol.CodeSearchResult{Strategy: protocol.StrategyLexical, Hits: []protocol.CodeHit{}}
	q := queryTerms(query)
	if len(q) == 0 {
		res.Note = "the query has no searchable words (only stop words or punctuation)"
		return res, nil
	}
	sc := &scan{s: s, ctx: ctx, root: root, glob: glob, q: q, res: &res}
	err := filepath.WalkDir(root, sc.visit)
	switch {
	case errors.Is(err, errScanDone), errors.Is(err, context.DeadlineExceeded):
		res.Truncated = true
	case err != nil:
		return res, err
	}
	res.Hits = rank(sc.docs, q, normIdent(query), limit)
	return res, nil
}

// queryTerms returns the distinct terms of a query.
func queryTerms(query string) []string {
	var q []string
	Terms(query, func(t string) {
		if !slices.Contains(q, t) {
			q = append(q, t)
		}
	})
	return q
}

// scan is the state of one lexical walk.
type scan struct {
	s     *Service
	ctx   context.Context
	root  string
	glob  string
	q     []string
	res   *protocol.CodeSearchResult
	bytes int64
	docs  []doc
}

// visit indexes one entry of the walk. Hidden and dependency directories
// and symlinks are skipped; unreadable entries below the root are too.
func (sc *scan) visit(p string, e fs.DirEntry, err error) error {
	if err != nil {
		if p == sc.root {
			return err
		}
		return nil
	}
	if err := sc.ctx.Err(); err != nil {
		return err
	}
	name := e.Name()
	if e.IsDir() {
		if p != sc.root && (strings.HasPrefix(name, ".") || skipDirs[name]) {
			return filepath.SkipDir
		}
		return nil
	}
	lang, ok := LangOf(name)
	if !ok || !e.Type().IsRegular() {
		return nil
	}
	if sc.glob != "" {
		if m, _ := filepath.Match(sc.glob, name); !m {
			return nil
		}
	}
	if sc.res.FilesScanned >= sc.s.opts.MaxFiles || sc.bytes >= sc.s.opts.MaxBytes {
		return errScanDone
	}
	if info, err := e.Info(); err != nil || info.Size() > sc.s.opts.MaxFileBytes {
		return nil
	}
	src, err := os.ReadFile(p)
	if err != nil {
		return nil
	}
	sc.res.FilesScanned++
	sc.bytes += int64(len(src))
	sc.index(p, lang, src)
	return nil
}

// index adds the chunks of one file.
func (sc *scan) index(p string, lang Lang, src []byte) {
	rel, err := filepath.Rel(sc.root, p)
	if err != nil {
		rel = p
	}
	pathTF := sc.count(rel)
	for _, c := range chunks(src, Symbols(lang, src)) {
		d := doc{path: p, c: c, tf: map[string]float64{}}
		Terms(string(c.text), func(t string) {
			d.terms++
			if slices.Contains(sc.q, t) {
				d.tf[t]++
			}
		})
		for _, n := range c.names {
			for t, k := range sc.count(n) {
				d.tf[t] += nameWeight * k
			}
		}
		for t, k := range pathTF {
			d.tf[t] += pathWeight * k
		}
		sc.docs = append(sc.docs, d)
	}
}

// count returns how often each query term occurs in s.
func (sc *scan) count(s string) map[string]float64 {
	m := map[string]float64{}
	Terms(s, func(t string) {
		if slices.Contains(sc.q, t) {
			m[t]++
		}
	})
	return m
}

// rank scores docs by BM25F and returns the best limit as hits; exact
// is the query as one identifier (normIdent).
func rank(docs []doc, q []string, exact string, limit int) []protocol.CodeHit {
	if len(docs) == 0 {
		return []protocol.CodeHit{}
	}
	n := float64(len(docs))
	var total float64
	df := map[string]float64{}
	for _, d := range docs {
		total += float64(d.terms)
		for t := range d.tf {
			df[t]++
		}
	}
	avg := max(total/n, 1)
	type scored struct {
		d     *doc
		score float64
	}
	var all []scored
	for i := range docs {
		d := &docs[i]
		var score float64
		for _, t := range q {
			tf := d.tf[t]
			if tf == 0 {
				continue
			}
			idf := math.Log(1 + (n-df[t]+0.5)/(df[t]+0.5))
			score += idf * tf * (bm25K1 + 1) / (tf + bm25K1*(1-bm25B+bm25B*float64(d.terms)/avg))
		}
		if score == 0 {
			continue
		}
		if namesExactly(d.c, exact) {
			score *= exactBoost
		}
		all = append(all, scored{d, score})
	}
	slices.SortStableFunc(all, func(a, b scored) int {
		if a.score != b.score {
			if a.score > b.score {
				return -1
			}
			return 1
		}
		return strings.Compare(a.d.path, b.d.path)
	})
	hits := []protocol.CodeHit{}
	for _, s := range all[:min(limit, len(all))] {
		c := s.d.c
		hits = append(hits, protocol.CodeHit{Path: s.d.path, Line: c.line, EndLine: c.end, Text: cutText(c.first),
			Symbol: c.symbol.FullName(), Kind: string(c.symbol.Kind), Score: math.Round(s.score*1000) / 1000})
	}
	return hits
}

// namesExactly reports whether the query, normalised to exact, is the
// name of one of c's definitions (with or without its container).
func namesExactly(c chunk, exact string) bool {
	if exact == "" {
		return false
	}
	for _, n := range c.names {
		base := n[strings.LastIndexByte(n, '.')+1:]
		if normIdent(n) == exact || normIdent(base) == exact {
			return true
		}
	}
	return false
}

// normIdent lowercases s and drops everything but letters and digits.
func normIdent(s string) string {
	return strings.Map(func(r rune) rune {
		if isWord(r) && r != '_' {
			return unicode.ToLower(r)
		}
		return -1
	}, s)
}
