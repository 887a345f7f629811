package codesearch_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/sandgate/sandgate/runner/codesearch"
)

// sym renders a symbol as "kind Container.Name line/start" for compact
// tables.
func sym(s codesearch.Symbol) string {
	return fmt.Sprintf("%s %s %d/%d", s.Kind, s.FullName(), s.Line, s.Start)
}

func TestSymbols(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		lang codesearch.Lang
		src  string
		want []string
	}{
		{"go", codesearch.LangGo, `package p

// Limit is documented.
const Limit = 1

const (
	// A is one.
	A = 1
	B, C = 2, 3
)

type T struct{ n int }

// Get returns n.
func (t *T) Get() int { return t.n }

func (g G[K]) Put(k K) {}

func New() *T { return nil }

var x = 1
`, []string{"const Limit 4/3", "const A 8/7", "const B 9/9", "const C 9/9", "type T 12/12",
			"method T.Get 15/14", "method G.Put 17/17", "function New 19/19", "var x 21/21"}},
		{"go with a syntax error", codesearch.LangGo, "package p\n\nfunc Good() {}\n\nfunc Bad( {\n", []string{"function Good 3/3", "function Bad 5/5"}},
		{"python", codesearch.LangPython, `import os

MAX_SIZE = 10

# A helper.
def helper(x):
    """def not_a_function():
    class NotAClass:
    """
    return x

class Store(Base):
    @property
    def size(self):
        return 1

    async def fetch(self):
        def inner():
            pass

def after():
    pass
`, []string{"const MAX_SIZE 3/3", "function helper 6/5", "class Store 12/12", "method Store.size 14/13",
			"method Store.fetch 17/17", "function inner 18/18", "function after 21/21"}},
		{"javascript", codesearch.LangJavaScript, `// Adds.
export function add(a, b) { return a + b }
const MAX = 5
export const handler = async (req) => {
  if (req) {
    return 1
  }
}
/*
function commented() {}
*/
class Queue extends Base {
  constructor(n) {
    this.n = n
  }
  /** Push one. */
  async push(x) {
    for (const y of x) {
    }
  }
}
function* gen() {}
`, []string{"function add 2/1", "const MAX 3/3", "function handler 4/4", "class Queue 12/9", // the comment block right above is its lead
			"method Queue.constructor 13/13", "method Queue.push 17/16", "function gen 22/22"}},
		{"typescript", codesearch.LangTypeScript, `export interface Options {
  size: number
}
export type Mode = "a" | "b"
export enum Color { Red }
export default class Client<T> {
  private readonly opts: Options
  public async send(msg: string): Promise<void> {
  }
  get size(): number {
    return 1
  }
}
const parse = (s: string): number => 1
`, []string{"type Options 1/1", "type Mode 4/4", "type Color 5/5", "class Client 6/6",
			"method Client.send 8/8", "method Client.size 10/10", "function parse 14/14"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			for _, s := range codesearch.Symbols(tc.lang, []byte(tc.src)) {
				got = append(got, sym(s))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Symbols:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestLangOf(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]struct {
		lang   codesearch.Lang
		source bool
	}{
		"main.go": {codesearch.LangGo, true}, "a.PY": {codesearch.LangPython, true}, "x.tsx": {codesearch.LangTypeScript, true},
		"x.mjs": {codesearch.LangJavaScript, true}, "lib.rs": {"", true}, "README.md": {"", false}, "Makefile": {"", false},
	} {
		if l, ok := codesearch.LangOf(name); l != want.lang || ok != want.source {
			t.Errorf("LangOf(%q) = %q, %v; want %q, %v", name, l, ok, want.lang, want.source)
		}
	}
}

func FuzzSymbols(f *testing.F) {
	f.Add("def f():\n  pass\n", "class A {\n  m() {\n  }\n}\n")
	f.Add(`"""`, "/*")
	f.Fuzz(func(t *testing.T, py, js string) {
		for _, tc := range []struct {
			lang codesearch.Lang
			src  string
		}{{codesearch.LangPython, py}, {codesearch.LangJavaScript, js}, {codesearch.LangGo, py}} {
			for _, s := range codesearch.Symbols(tc.lang, []byte(tc.src)) {
				if s.Name == "" || s.Start < 1 || s.Start > s.Line {
					t.Fatalf("Symbols(%s, %q): bad symbol %+v", tc.lang, tc.src, s)
				}
			}
		}
	})
}
