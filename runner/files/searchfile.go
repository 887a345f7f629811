package files

import (
	"bytes"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/sandgate/sandgate/runner/protocol"
)

const (
	// binarySniff is how much of a file is checked for a NUL byte, the
	// same heuristic git and grep use to call a file binary.
	binarySniff = 8 << 10
	// maxLineText cuts the text of a match, so one minified line cannot
	// take the whole byte budget of a search.
	maxLineText = 300
	ellipsis    = "…"
)

// file searches one file. When explicit (the caller named this file) a
// file that cannot be searched is an error that says why; during a walk it
// is skipped silently, like grep -r does.
func (sc *searcher) file(p string, explicit bool) error {
	if sc.res.FilesScanned >= sc.s.opts.MaxSearchFiles {
		sc.res.Truncated = true
		return errSearchDone
	}
	if err := sc.ctx.Err(); err != nil {
		return err
	}
	data, err := sc.load(p)
	if err != nil {
		if explicit {
			return err
		}
		return nil
	}
	sc.res.FilesScanned++
	return sc.scan(p, data)
}

// load reads p into the reused buffer, refusing files above the per-file
// cap and binary files.
func (sc *searcher) load(p string) ([]byte, error) {
	f, fi, err := sc.s.openFile("search", p, p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	limit := sc.s.opts.MaxSearchFileBytes
	hint := "search a smaller file, or read this one in ranges"
	if fi.Size() > limit {
		return nil, tooLarge("search", p, "file", fi.Size(), limit, "per-file search", hint)
	}
	sc.buf.Reset()
	if _, err := sc.buf.ReadFrom(io.LimitReader(f, limit+1)); err != nil {
		return nil, sc.s.fsError("search", p, err)
	}
	data := sc.buf.Bytes()
	if int64(len(data)) > limit {
		return nil, tooLarge("search", p, "file", int64(len(data)), limit, "per-file search", hint)
	}
	if bytes.IndexByte(data[:min(len(data), binarySniff)], 0) >= 0 {
		return nil, protocol.Errorf(protocol.CodeInvalid,
			"search %s: binary file (it has a NUL byte in its first 8 KiB); read it with encoding \"base64\" instead", p)
	}
	return data, nil
}

// scan adds the lines of data that match. A trailing "\r" is not part of
// a line, so "foo$" matches in CRLF files too.
func (sc *searcher) scan(p string, data []byte) error {
	for n := 1; len(data) > 0; n++ {
		if n%ctxCheckEvery == 0 && sc.ctx.Err() != nil {
			return sc.ctx.Err()
		}
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if !sc.re.Match(line) {
			continue
		}
		if err := sc.add(p, n, line); err != nil {
			return err
		}
	}
	return nil
}

// add records a match unless that would pass the result or byte cap; the
// caps are checked against a match in hand, so Truncated means at least
// one more match exists.
func (sc *searcher) add(p string, n int, line []byte) error {
	text := lineText(line)
	if len(sc.res.Matches) >= sc.maxResults || sc.bytes+int64(len(text)) > sc.s.opts.MaxSearchBytes {
		sc.res.Truncated = true
		return errSearchDone
	}
	sc.bytes += int64(len(text))
	sc.res.Matches = append(sc.res.Matches, protocol.SearchMatch{Path: p, Line: n, Text: text})
	return nil
}

// lineText returns line as valid UTF-8 of at most maxLineText bytes, cut
// at a rune boundary and marked with an ellipsis when cut. Only a window
// of a long line is converted, so a 10 MiB line costs no more than a
// short one.
func lineText(line []byte) string {
	const window = 4 * maxLineText
	cut := len(line) > window
	if cut {
		line = line[:window]
	}
	s := strings.ToValidUTF8(string(line), "\uFFFD")
	if !cut && len(s) <= maxLineText {
		return s
	}
	i := min(maxLineText-len(ellipsis), len(s))
	for i > 0 && i < len(s) && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + ellipsis
}
