package codesearch

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
)

// goSymbols extracts Go's top-level functions, methods, types, constants
// and variables with go/parser, which returns a partial tree for a file
// with syntax errors.
func goSymbols(src []byte) []Symbol {
	fset := token.NewFileSet()
	f, _ := parser.ParseFile(fset, "", src, parser.ParseComments|parser.SkipObjectResolution)
	if f == nil {
		return nil
	}
	line := func(p token.Pos) int { return fset.Position(p).Line }
	start := func(doc *ast.CommentGroup, p token.Pos) int {
		if doc != nil {
			return line(doc.Pos())
		}
		return line(p)
	}
	var out []Symbol
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			s := Symbol{Name: d.Name.Name, Kind: KindFunction, Line: line(d.Name.Pos()), Start: start(d.Doc, d.Pos())}
			if d.Recv != nil && len(d.Recv.List) > 0 {
				s.Kind, s.Container = KindMethod, recvName(d.Recv.List[0].Type)
			}
			out = append(out, s)
		case *ast.GenDecl:
			out = append(out, genSymbols(d, line, start)...)
		}
	}
	slices.SortStableFunc(out, func(a, b Symbol) int { return a.Line - b.Line })
	return out
}

// genSymbols returns the types, constants and variables of one
// declaration. A lone spec takes the declaration's comment; a spec in a
// group takes its own, or starts at its own line.
func genSymbols(d *ast.GenDecl, line func(token.Pos) int, start func(*ast.CommentGroup, token.Pos) int) []Symbol {
	var out []Symbol
	for _, spec := range d.Specs {
		doc, pos := d.Doc, d.Pos()
		if d.Lparen.IsValid() {
			doc, pos = nil, spec.Pos()
		}
		switch s := spec.(type) {
		case *ast.TypeSpec:
			if d.Lparen.IsValid() {
				doc = s.Doc
			}
			out = append(out, Symbol{Name: s.Name.Name, Kind: KindType, Line: line(s.Name.Pos()), Start: start(doc, pos)})
		case *ast.ValueSpec:
			if d.Lparen.IsValid() {
				doc = s.Doc
			}
			kind := KindVar
			if d.Tok == token.CONST {
				kind = KindConst
			}
			// Names of one spec (a, b = 1, 2) share its lines.
			for _, n := range s.Names {
				out = append(out, Symbol{Name: n.Name, Kind: kind, Line: line(n.Pos()), Start: start(doc, pos)})
			}
		}
	}
	return out
}

// recvName is the type name of a method receiver: T for T, *T, T[K] and
// *T[K].
func recvName(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.ParenExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}
