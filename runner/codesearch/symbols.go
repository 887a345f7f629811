package codesearch

import (
	"path/filepath"
	"strings"
)

// Lang is a language whose definitions this package extracts.
type Lang string

// Languages with symbol extraction.
const (
	LangGo         Lang = "go"
	LangPython     Lang = "python"
	LangJavaScript Lang = "javascript"
	LangTypeScript Lang = "typescript"
)

// Kind is what a definition defines.
type Kind string

// Kinds of definitions.
const (
	KindFunction Kind = "function"
	KindMethod   Kind = "method"
	KindType     Kind = "type"
	KindClass    Kind = "class"
	KindConst    Kind = "const"
	KindVar      Kind = "var"
)

// Symbol is one definition in a file.
type Symbol struct {
	Name      string
	Container string // a method's type or class; "" at top level
	Kind      Kind
	Line      int // the line that names it, 1-based
	Start     int // its first line, with the comment or decorators above it
}

// FullName is Container.Name, or Name at top level.
func (s Symbol) FullName() string {
	if s.Container == "" {
		return s.Name
	}
	return s.Container + "." + s.Name
}

// langExts maps file extensions to the languages with extraction.
var langExts = map[string]Lang{
	".go": LangGo, ".py": LangPython, ".pyi": LangPython,
	".js": LangJavaScript, ".mjs": LangJavaScript, ".cjs": LangJavaScript, ".jsx": LangJavaScript,
	".ts": LangTypeScript, ".mts": LangTypeScript, ".cts": LangTypeScript, ".tsx": LangTypeScript,
}

// otherSourceExts are indexed too, in windows of lines, without
// definitions.
var otherSourceExts = wordSet(`.c .h .cc .cpp .cxx .hpp .hh .java .kt .kts .scala .rs .rb .php .cs .swift
	.m .mm .sh .bash .zsh .lua .pl .pm .r .jl .ex .exs .erl .hs .ml .clj .dart .zig .sql .proto .vue .svelte`)

// LangOf returns the language of a file by its extension, and whether it
// is a source file this package indexes at all.
func LangOf(name string) (Lang, bool) {
	ext := strings.ToLower(filepath.Ext(name))
	if l, ok := langExts[ext]; ok {
		return l, true
	}
	return "", otherSourceExts[ext]
}

// Symbols returns the definitions of src, a file in lang, in line order.
// A file that does not parse yields what could be read of it.
func Symbols(lang Lang, src []byte) []Symbol {
	switch lang {
	case LangGo:
		return goSymbols(src)
	case LangPython:
		return pythonSymbols(src)
	case LangJavaScript, LangTypeScript:
		return jsSymbols(src)
	}
	return nil
}
