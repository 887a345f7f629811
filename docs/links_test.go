package docs_test

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// pages are the Markdown files whose relative links must resolve.
func pages(t *testing.T) []string {
	t.Helper()
	own, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"../README.md", "../CONTRIBUTING.md", "../SECURITY.md"}, own...)
}

var (
	linkRE = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	codeRE = regexp.MustCompile("`[^`]*`")
)

// TestRelativeLinks checks that every relative link in the README,
// CONTRIBUTING, SECURITY and docs/*.md names a file or directory that
// exists and, when it has a #fragment into a Markdown page, a heading of
// that page (GitHub's anchors).
func TestRelativeLinks(t *testing.T) {
	t.Parallel()
	anchors := map[string]map[string]bool{}
	for _, page := range pages(t) {
		lines := prose(t, page)
		for n, line := range lines {
			for _, m := range linkRE.FindAllStringSubmatch(codeRE.ReplaceAllString(line, ""), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, frag, _ := strings.Cut(target, "#")
				file := page
				if path != "" {
					file = filepath.Join(filepath.Dir(page), path)
					if _, err := os.Stat(file); err != nil {
						t.Errorf("%s:%d: link %q: %v", page, n+1, target, err)
						continue
					}
				}
				if frag == "" || !strings.HasSuffix(file, ".md") {
					continue
				}
				if anchors[file] == nil {
					anchors[file] = headingAnchors(prose(t, file))
				}
				if !anchors[file][frag] {
					t.Errorf("%s:%d: link %q: %s has no heading with anchor #%s", page, n+1, target, file, frag)
				}
			}
		}
	}
}

// prose returns a Markdown file's lines with fenced code blocks blanked,
// so that neither links nor headings are read from code.
func prose(t *testing.T, file string) []string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	fenced := false
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			line = ""
		}
		if fenced {
			line = ""
		}
		lines = append(lines, line)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

// headingAnchors computes the anchors GitHub gives a page's headings:
// lower case, punctuation other than '-' and '_' dropped, spaces turned
// into '-', and "-1", "-2" after repeats.
func headingAnchors(lines []string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, line := range lines {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteByte('-')
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}
