package audit

import "unicode/utf8"

// Clip returns s if it is at most n bytes long, and otherwise its longest
// prefix of at most n bytes that ends on a character boundary, followed
// by "…". Cutting inside a character would leave invalid UTF-8 in an
// audit summary, an error text or a prompt's title. Backing off stops
// after utf8.UTFMax-1 bytes, so a run of stray continuation bytes
// (invalid anyway) cannot shorten the result to nothing.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for k := 0; k < utf8.UTFMax-1 && i > 0 && !utf8.RuneStart(s[i]); k++ {
		i--
	}
	return s[:i] + "…"
}
