package protocol

import (
	"fmt"
	"slices"
	"strings"
)

// Language is a language run_code runs. The set is closed and decided
// here, once, for the gateway (schema, validation) and the runner (which
// interpreter to start) alike, so the two can never disagree on a name.
type Language string

// Languages, canonical names.
const (
	Python Language = "python"
	Node   Language = "node"
	Bash   Language = "bash"
)

// Languages lists the canonical names in the order they are documented.
var Languages = []Language{Python, Node, Bash}

// languageAliases are other names clients use, each mapped to its language.
var languageAliases = map[string]Language{"python3": Python, "py": Python, "javascript": Node, "js": Node, "nodejs": Node, "sh": Bash}

// ParseLanguage returns the language named by s, a canonical name or an
// alias, in any case. An unknown name is a CodeInvalid error listing
// what is accepted.
func ParseLanguage(s string) (Language, error) {
	name := strings.ToLower(strings.TrimSpace(s))
	for _, l := range Languages {
		if name == string(l) {
			return l, nil
		}
	}
	if l, ok := languageAliases[name]; ok {
		return l, nil
	}
	return "", Errorf(CodeInvalid, "unknown language %q; use one of %s", s, LanguageNames())
}

// LanguageNames describes the accepted names for messages and schemas:
// "python (python3, py), node (javascript, js, nodejs), bash (sh)".
func LanguageNames() string {
	parts := make([]string, 0, len(Languages))
	for _, l := range Languages {
		var alts []string
		for a, to := range languageAliases {
			if to == l {
				alts = append(alts, a)
			}
		}
		slices.Sort(alts)
		parts = append(parts, fmt.Sprintf("%s (%s)", l, strings.Join(alts, ", ")))
	}
	return strings.Join(parts, ", ")
}
