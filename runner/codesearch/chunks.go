package codesearch

import (
	"bytes"
	"strings"
)

// windowLines is the size of the chunks of a file without definitions.
const windowLines = 50

// chunk is one document of the lexical index: a definition with the lines
// up to the next one, a file's preamble, or a window of a file.
type chunk struct {
	line, end int    // the line that names it (or its first) and its last, 1-based
	symbol    Symbol // zero for a preamble or window
	names     []string
	text      []byte // its lines
	first     string // the text of line
}

// chunks cuts a file into documents at its definitions' first lines. The
// lines before the first definition (package clause, imports, a file
// comment) are a preamble chunk; definitions that share a first line (a,
// b = 1, 2) share a chunk.
func chunks(src []byte, syms []Symbol) []chunk {
	lines := bytes.SplitAfter(src, []byte{'\n'})
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	if len(syms) == 0 {
		return windows(lines)
	}
	var out []chunk
	if syms[0].Start > 1 {
		out = append(out, span(lines, 1, syms[0].Start-1, Symbol{}))
	}
	for i := 0; i < len(syms); {
		s := syms[i]
		names := []string{s.FullName()}
		j := i + 1
		for ; j < len(syms) && syms[j].Start <= s.Start; j++ {
			names = append(names, syms[j].FullName())
		}
		end := len(lines)
		if j < len(syms) {
			end = syms[j].Start - 1
		}
		c := span(lines, s.Start, max(end, s.Line), s)
		c.names = names
		out = append(out, c)
		i = j
	}
	return out
}

// windows cuts a file without definitions into fixed windows.
func windows(lines [][]byte) []chunk {
	var out []chunk
	for start := 1; start <= len(lines); start += windowLines {
		out = append(out, span(lines, start, min(start+windowLines-1, len(lines)), Symbol{}))
	}
	return out
}

// span is the chunk of lines start..end (1-based, inclusive) for s.
func span(lines [][]byte, start, end int, s Symbol) chunk {
	start = max(start, 1)
	end = min(end, len(lines))
	c := chunk{line: start, end: end, symbol: s}
	if s.Line > 0 {
		c.line = s.Line
	}
	var b bytes.Buffer
	for _, l := range lines[start-1 : max(end, start-1)] {
		b.Write(l)
	}
	c.text = b.Bytes()
	if c.line >= 1 && c.line <= len(lines) {
		c.first = strings.TrimRight(string(lines[c.line-1]), "\r\n")
	}
	return c
}
