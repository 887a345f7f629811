package codesearch

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// stopWords are the English words of a question ("where is the ... ")
// that would otherwise match every comment.
var stopWords = wordSet(`a an the is are was were be been being of to in on at by for from with
		and or not no it its this that these those where which what when who whom how why does do did done
		there here we you they he she i me my our your their has have had can could should would will shall
		may might must as if into onto than then so such any all each some`)

func wordSet(words string) map[string]bool {
	set := map[string]bool{}
	for _, w := range strings.Fields(words) {
		set[w] = true
	}
	return set
}

// Terms calls emit for each index term of text: every word (a run of
// letters, digits and underscores) lowercased and stemmed, each part of a
// compound identifier (MaxFrameBytes, max_frame_bytes: max, frame, byte)
// and the compound itself without underscores (maxframebytes), so an
// exact identifier in a query matches best. Stop words and one-letter
// parts are dropped.
func Terms(text string, emit func(string)) {
	for len(text) > 0 {
		i := strings.IndexFunc(text, isWord)
		if i < 0 {
			return
		}
		text = text[i:]
		j := strings.IndexFunc(text, func(r rune) bool { return !isWord(r) })
		if j < 0 {
			j = len(text)
		}
		word(text[:j], emit)
		text = text[j:]
	}
}

func isWord(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// word emits the terms of one word.
func word(w string, emit func(string)) {
	parts := 0
	splitIdent(w, func(p string) {
		parts++
		term(p, emit)
	})
	if parts > 1 {
		whole := strings.ToLower(strings.ReplaceAll(w, "_", ""))
		if len(whole) > 1 {
			emit(whole)
		}
	}
}

// term emits one part, lowercased and stemmed, unless it is a stop word.
func term(p string, emit func(string)) {
	p = strings.ToLower(p)
	if len(p) < 2 || stopWords[p] {
		return
	}
	emit(Stem(p))
}

// splitIdent splits an identifier at underscores, lower-to-upper case
// changes, the end of an acronym (HTTPServer: HTTP, Server) and
// letter-digit changes.
func splitIdent(w string, part func(string)) {
	start := 0
	prev := rune(-1)
	for i, r := range w {
		if r == '_' {
			if i > start {
				part(w[start:i])
			}
			start, prev = i+1, -1
			continue
		}
		if i > start && boundary(prev, r, w[i+utf8.RuneLen(r):]) {
			part(w[start:i])
			start = i
		}
		prev = r
	}
	if start < len(w) {
		part(w[start:])
	}
}

// boundary reports whether a part ends between prev and r; rest follows r.
func boundary(prev, r rune, rest string) bool {
	switch {
	case unicode.IsLower(prev) && unicode.IsUpper(r):
		return true
	case unicode.IsUpper(prev) && unicode.IsUpper(r):
		next, _ := utf8.DecodeRuneInString(rest)
		return unicode.IsLower(next)
	case unicode.IsDigit(prev) != unicode.IsDigit(r):
		return true
	}
	return false
}

// Stem strips the commonest English inflections, enough that "verified",
// "verifies" and "verify", or "limits" and "limit", meet: a light stemmer
// is right for code, whose words are mostly already base forms.
func Stem(w string) string {
	n := len(w)
	switch {
	case n > 4 && (strings.HasSuffix(w, "ies") || strings.HasSuffix(w, "ied")):
		return w[:n-3] + "y"
	case n > 5 && strings.HasSuffix(w, "ing"):
		return undouble(w[:n-3])
	case n > 4 && strings.HasSuffix(w, "ed"):
		return undouble(w[:n-2])
	case n > 4 && (strings.HasSuffix(w, "ches") || strings.HasSuffix(w, "shes") || strings.HasSuffix(w, "sses") || strings.HasSuffix(w, "xes")):
		return w[:n-2]
	case n > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		return w[:n-1]
	}
	return w
}

// undouble drops a doubled final consonant left by a suffix: running →
// run, stopped → stop.
func undouble(w string) string {
	n := len(w)
	if n >= 3 && w[n-1] == w[n-2] && !strings.ContainsRune("aeiouls", rune(w[n-1])) {
		return w[:n-1]
	}
	return w
}
