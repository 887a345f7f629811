package codesearch

import (
	"bytes"
	"regexp"
	"strings"
)

// Python and JavaScript/TypeScript definitions come from a line scanner:
// anchored regular expressions tried on each line that is code, not
// inside a comment block or a Python triple-quoted string. It finds what
// is written the usual way (one definition per line, at its start) and
// can miss the unusual; it never needs the file to parse.

var (
	pyDef   = regexp.MustCompile(`^(\s*)(?:async\s+)?def\s+([A-Za-z_]\w*)\s*\(`)
	pyClass = regexp.MustCompile(`^(\s*)class\s+([A-Za-z_]\w*)\s*[(:]`)
	pyConst = regexp.MustCompile(`^([A-Z][A-Z0-9_]*)\s*(?::[^=]*)?=[^=]`)

	jsFunc      = regexp.MustCompile(`^(\s*)(?:export\s+)?(?:default\s+)?(?:async\s+)?function\s*\*?\s*([A-Za-z_$][\w$]*)`)
	jsClass     = regexp.MustCompile(`^(\s*)(?:export\s+)?(?:default\s+)?(?:abstract\s+)?class\s+([A-Za-z_$][\w$]*)`)
	jsType      = regexp.MustCompile(`^(\s*)(?:export\s+)?(?:declare\s+)?(?:interface\s+([A-Za-z_$][\w$]*)|type\s+([A-Za-z_$][\w$]*)\s*(?:<.*>)?\s*=|(?:const\s+)?enum\s+([A-Za-z_$][\w$]*))`)
	jsArrow     = regexp.MustCompile(`^(\s*)(?:export\s+)?(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*(?::[^=]+)?=\s*(?:async\s+)?(?:function\b|\([^)]*\)\s*(?::[^=]+)?=>|[A-Za-z_$][\w$]*\s*=>)`)
	jsConst     = regexp.MustCompile(`^(\s*)(?:export\s+)?const\s+([A-Z][A-Z0-9_]*)\s*(?::[^=]+)?=`)
	jsMethod    = regexp.MustCompile(`^(\s+)(?:(?:public|private|protected|static|async|override|readonly|get|set)\s+)*\*?(#?[A-Za-z_$][\w$]*)\s*(?:<[^>]*>)?\s*\([^;]*\)\s*(?::\s*[^{;]+)?\{\s*(?:}\s*)?$`)
	jsNotMethod = wordSet(`if for while switch catch function return else with do new typeof await yield super`)
)

// line is one line of a file and whether it is code a definition can
// start on.
type line struct {
	text string
	code bool
}

// splitLines cuts src into lines, marking those inside comments or
// strings that span lines (open and close are the delimiters, inline is
// the line-comment prefix).
func splitLines(src []byte, open, close, inline string) []line {
	var out []line
	in := false
	for _, b := range bytes.Split(src, []byte{'\n'}) {
		t := strings.TrimSuffix(string(b), "\r")
		trim := strings.TrimSpace(t)
		code := !in && !strings.HasPrefix(trim, inline) && !strings.HasPrefix(trim, open)
		// Count the delimiters on the line: an odd number toggles.
		n := strings.Count(t, open)
		if close != open {
			n += strings.Count(t, close)
		}
		if n%2 == 1 {
			in = !in
		}
		out = append(out, line{text: t, code: code})
	}
	return out
}

// container tracks the scope a definition is nested in, by indentation.
type container struct {
	name   string
	indent int
	class  bool
}

func pythonSymbols(src []byte) []Symbol {
	lines := splitLines(src, `"""`, `"""`, "#")
	var out []Symbol
	var cls []container // the enclosing classes and functions
	for i, l := range lines {
		if !l.code || strings.TrimSpace(l.text) == "" {
			continue
		}
		indent := len(l.text) - len(strings.TrimLeft(l.text, " \t"))
		for len(cls) > 0 && indent <= cls[len(cls)-1].indent {
			cls = cls[:len(cls)-1]
		}
		s := Symbol{Line: i + 1}
		if m := pyClass.FindStringSubmatch(l.text); m != nil {
			s.Name, s.Kind = m[2], KindClass
		} else if m := pyDef.FindStringSubmatch(l.text); m != nil {
			s.Name, s.Kind = m[2], KindFunction
			if len(cls) > 0 && cls[len(cls)-1].class {
				s.Kind, s.Container = KindMethod, cls[len(cls)-1].name
			}
		} else if m := pyConst.FindStringSubmatch(l.text); m != nil {
			s.Name, s.Kind = m[1], KindConst
		} else {
			continue
		}
		if s.Kind != KindConst {
			cls = append(cls, container{name: s.Name, indent: indent, class: s.Kind == KindClass})
		}
		s.Start = leadStart(lines, i, "#", "@")
		out = append(out, s)
	}
	return out
}

func jsSymbols(src []byte) []Symbol {
	lines := splitLines(src, "/*", "*/", "//")
	var out []Symbol
	var cls []container
	for i, l := range lines {
		if !l.code || strings.TrimSpace(l.text) == "" {
			continue
		}
		indent := len(l.text) - len(strings.TrimLeft(l.text, " \t"))
		for len(cls) > 0 && indent <= cls[len(cls)-1].indent && strings.HasPrefix(strings.TrimSpace(l.text), "}") {
			cls = cls[:len(cls)-1]
		}
		s, ok := jsLine(l.text, cls)
		if !ok {
			continue
		}
		s.Line = i + 1
		if s.Kind == KindClass {
			cls = append(cls, container{name: s.Name, indent: indent, class: true})
		}
		s.Start = leadStart(lines, i, "//", "/*", "*", "@")
		out = append(out, s)
	}
	return out
}

// jsLine matches one line of JavaScript or TypeScript; cls is the class
// stack, whose top is where a method belongs.
func jsLine(t string, cls []container) (Symbol, bool) {
	if m := jsClass.FindStringSubmatch(t); m != nil {
		return Symbol{Name: m[2], Kind: KindClass}, true
	}
	if m := jsFunc.FindStringSubmatch(t); m != nil {
		return Symbol{Name: m[2], Kind: KindFunction}, true
	}
	if m := jsType.FindStringSubmatch(t); m != nil {
		return Symbol{Name: m[2] + m[3] + m[4], Kind: KindType}, true
	}
	if m := jsArrow.FindStringSubmatch(t); m != nil {
		return Symbol{Name: m[2], Kind: KindFunction}, true
	}
	if m := jsConst.FindStringSubmatch(t); m != nil {
		return Symbol{Name: m[2], Kind: KindConst}, true
	}
	if len(cls) > 0 {
		if m := jsMethod.FindStringSubmatch(t); m != nil && !jsNotMethod[m[2]] {
			return Symbol{Name: m[2], Kind: KindMethod, Container: cls[len(cls)-1].name}, true
		}
	}
	return Symbol{}, false
}

// leadStart returns the first line (1-based) of the comment or decorator
// lines right above line i, or i+1 when there are none.
func leadStart(lines []line, i int, prefixes ...string) int {
	start := i
	for j := i - 1; j >= 0; j-- {
		t := strings.TrimSpace(lines[j].text)
		lead := t != "" && (!lines[j].code || hasAnyPrefix(t, prefixes))
		if !lead {
			break
		}
		start = j
	}
	return start + 1
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
