package mcpedge

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestUnquoteMatchesEncodingJSON checks unquote's fast path and each way
// out of it against encoding/json, which is what every tool's arguments
// meant before the edge decoded them itself.
func TestUnquoteMatchesEncodingJSON(t *testing.T) {
	lines := strings.Repeat(`line with \"quotes\", a tab\t and a \\ backslash\n`, 1000)
	for _, lit := range []string{
		`""`,
		`"plain"`,
		`"` + lines + `"`,
		`"all short ones: \" \\ \/ \b \f \n \r \t"`,
		`"\n"`, `"\\\\"`, `"ends in an escape\n"`, `"\tstarts with one"`,
		`"é, 中文 and 🙂 as UTF-8"`,
		`"\u00e9 after a short \n one"`,            // \u: the slow path
		`"short one first\n, then \u2028"`,         // found after a short one
		`"a surrogate pair \ud83d\ude42"`,          // decodes to one rune
		`"a lone surrogate \ud83d and text"`,       // U+FFFD
		"\"invalid UTF-8 \xff\xfe here\"",          // U+FFFD per byte
		"\"invalid UTF-8 \xc3 then an escape\\n\"", // both
	} {
		var want string
		if err := json.Unmarshal([]byte(lit), &want); err != nil {
			t.Fatalf("test literal %q: %v", lit, err)
		}
		if got := unquote([]byte(lit)); got != want {
			t.Errorf("unquote(%.60q) = %.60q, want %.60q", lit, got, want)
		}
	}
}

// FuzzUnquote compares unquote with encoding/json on every string
// literal the fuzzer makes valid JSON of.
func FuzzUnquote(f *testing.F) {
	for _, s := range []string{``, `a\nb`, `q\"q\\q\/`, `\u2028\u00e9`, "\xff\\t", `\ud83d\ude42\ud83d`, "é\\t\x01"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		lit := []byte(`"` + body + `"`)
		var want string
		if json.Unmarshal(lit, &want) != nil {
			return // not a literal the decoder would have let through
		}
		if got := unquote(lit); got != want {
			t.Fatalf("unquote(%q) = %q, want %q", lit, got, want)
		}
	})
}
