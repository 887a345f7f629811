package layering

import (
	"fmt"
	"slices"
	"strings"
)

// A Rule is one row of the layering table.
type Rule interface {
	// Check returns the ways g breaks the rule, in a stable order.
	Check(g Graph) []Violation
}

// A Violation is one way a graph breaks a rule.
type Violation struct {
	Rule string // what the rule keeps, its Why
	// Chain lists import paths, each importing the next: from a package
	// the rule constrains to the import it must not have.
	Chain []string
	// Stale is set instead of Chain when the rule matches no package,
	// which after a rename would leave it guarding nothing.
	Stale string
}

func (v Violation) String() string {
	if v.Stale != "" {
		return fmt.Sprintf("%s: %s", v.Rule, v.Stale)
	}
	return fmt.Sprintf("%s: %s", v.Rule, strings.Join(v.Chain, " -> "))
}

// Patterns are import path patterns as the go command writes them: a
// path, or a path followed by "/..." for it and everything under it.
type Patterns []string

// Match reports whether path matches one of the patterns.
func (ps Patterns) Match(path string) bool {
	for _, p := range ps {
		if prefix, ok := strings.CutSuffix(p, "/..."); ok {
			if path == prefix || strings.HasPrefix(path, prefix+"/") {
				return true
			}
		} else if path == p {
			return true
		}
	}
	return false
}

// NoDeps says that no package matching From may depend, directly or
// through other packages, on a package matching To, unless that package
// also matches Except. Except names what a constrained layer may use
// although it lives among what To forbids; what an excepted package
// imports is checked like everything else.
type NoDeps struct {
	Why    string
	From   Patterns
	To     Patterns
	Except Patterns
}

// Check walks the graph breadth first from every package matching From,
// so each chain reported is a shortest one. It reports each forbidden
// package where a chain first enters what To forbids, not the packages
// beyond it.
func (r NoDeps) Check(g Graph) []Violation {
	forbidden := func(p string) bool { return r.To.Match(p) && !r.Except.Match(p) }
	parent := map[string]string{}
	var queue []string
	for _, p := range sortedKeys(g) {
		if r.From.Match(p) && !forbidden(p) {
			parent[p] = ""
			queue = append(queue, p)
		}
	}
	if len(queue) == 0 {
		return []Violation{{Rule: r.Why, Stale: fmt.Sprintf("no package matches %v", r.From)}}
	}
	var out []Violation
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if forbidden(p) {
			out = append(out, Violation{Rule: r.Why, Chain: chain(parent, p)})
			continue
		}
		for _, imp := range g[p] {
			if _, seen := parent[imp]; !seen {
				parent[imp] = p
				queue = append(queue, imp)
			}
		}
	}
	return out
}

// chain returns the path from a root of the walk to p.
func chain(parent map[string]string, p string) []string {
	var c []string
	for ; p != ""; p = parent[p] {
		c = append(c, p)
	}
	slices.Reverse(c)
	return c
}

// OnlyImporters says that only packages matching Importers may import a
// package matching Of directly. Packages matching Of may import one
// another. It applies to every package in the graph, third-party ones
// too, so that what knows Of is always listed in Importers.
type OnlyImporters struct {
	Why       string
	Importers Patterns
	Of        Patterns
}

// Check reports every direct import of Of from outside Importers.
func (r OnlyImporters) Check(g Graph) []Violation {
	var out []Violation
	present := false
	for _, p := range sortedKeys(g) {
		if r.Of.Match(p) {
			present = true
			continue
		}
		if r.Importers.Match(p) {
			continue
		}
		for _, imp := range g[p] {
			if r.Of.Match(imp) {
				out = append(out, Violation{Rule: r.Why, Chain: []string{p, imp}})
			}
		}
	}
	if !present {
		out = append(out, Violation{Rule: r.Why, Stale: fmt.Sprintf("no package matches %v", r.Of)})
	}
	return out
}

func sortedKeys(g Graph) []string {
	keys := make([]string, 0, len(g))
	for k := range g {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
