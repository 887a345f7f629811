package files

import "strings"

// Line arithmetic shared by Edit. A line is a run of bytes ended by "\n"
// or by the end of the file; the newline belongs to its line, so joining
// the lines gives back the file byte for byte. An empty file has no lines.

// splitLines returns the lines of s, each with its newline.
func splitLines(s string) []string {
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// lineCount returns the number of lines in s.
func lineCount(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// isCRLF reports whether s uses CRLF line endings: it has newlines and
// every one is "\r\n", or it has none and ends in "\r" (one line whose
// ending is half written; counting it as CRLF is what lets a delete undo
// an append to it). Only such files get their line endings applied to
// edit text; mixed files are left exactly as the caller wrote them.
func isCRLF(s string) bool {
	n := strings.Count(s, "\n")
	if n == 0 {
		return strings.HasSuffix(s, "\r")
	}
	return strings.Count(s, "\r\n") == n
}

// toCRLF turns every bare "\n" in s into "\r\n", leaving "\r\n" as is.
func toCRLF(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", "\r\n")
}

// endingsLike converts the newlines of text to those of a CRLF content,
// and returns text unchanged otherwise. Agents usually send "\n" whatever
// the file uses; this keeps a CRLF file from becoming mixed.
func endingsLike(content, text string) string {
	if isCRLF(content) {
		return toCRLF(text)
	}
	return text
}

// insertText puts text before line at (1-based; lineCount+1 appends) of
// content, as whole lines: a missing final newline is added. It returns
// the new content and the number of lines added. When content does not
// end in a newline and text is appended, the old last line gets one and
// the new last line goes without, so the file keeps its trailing-newline
// state and deleting the added lines restores it exactly (unless the last
// added line is empty; see below).
func insertText(content string, at int, text string) (string, int) {
	eol := "\n"
	if isCRLF(content) {
		eol = "\r\n"
	}
	text = endingsLike(content, text)
	if !strings.HasSuffix(text, "\n") {
		text += eol
	}
	added := strings.Count(text, "\n")
	lines := splitLines(content)
	if at == len(lines)+1 && content != "" && !strings.HasSuffix(content, "\n") {
		if body := strings.TrimSuffix(text, eol); body != "" && !strings.HasSuffix(body, "\n") {
			return content + eol + body, added
		}
		// The last new line is empty, and an empty line cannot be an
		// unterminated last line: here the file gains a final newline.
		return content + eol + text, added
	}
	var b strings.Builder
	b.Grow(len(content) + len(text))
	for _, l := range lines[:at-1] {
		b.WriteString(l)
	}
	b.WriteString(text)
	for _, l := range lines[at-1:] {
		b.WriteString(l)
	}
	return b.String(), added
}

// deleteLines removes lines from..to (1-based, inclusive) of content. When
// the last line goes from a file without a final newline, the new last
// line loses its newline, the mirror of insertText.
func deleteLines(content string, from, to int) string {
	lines := splitLines(content)
	out := strings.Join(lines[:from-1], "") + strings.Join(lines[to:], "")
	if to == len(lines) && !strings.HasSuffix(content, "\n") && strings.HasSuffix(out, "\n") {
		out = out[:len(out)-1]
		if isCRLF(content) {
			out = strings.TrimSuffix(out, "\r")
		}
	}
	return out
}
