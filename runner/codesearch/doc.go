// Package codesearch ranks the code below a directory of the sandbox for
// a query, two ways, for the gateway's search_code tool (which fuses
// them with file.search's regex by reciprocal rank):
//
//   - lexical: BM25 over the words of source files. Identifiers are split
//     at camelCase, snake_case and digits (and also kept whole), words are
//     lowercased and lightly stemmed, English stop words dropped. The
//     documents are definitions: each function, method, type, class and
//     constant with the comment above it and the lines up to the next
//     definition, plus a file's preamble. A term in the definition's name
//     weighs three times one in its body, a term in the file's path once
//     more; a query that names the definition exactly doubles its score.
//     Definitions come from go/parser for Go, and from a line scanner
//     (anchored regular expressions, comment- and docstring-aware) for
//     Python and JavaScript/TypeScript; other source files are cut into
//     fixed windows of lines.
//   - structural: syntax-tree patterns (`func $NAME($$$) error`) matched
//     by ast-grep, a binary the sandgate/base image carries. An image
//     without it gets a result that says so (Unavailable), not an error.
//
// Both are bounded by the caller's context (the gateway's
// protocol.CodeSearchRunnerTimeout), a number of files, bytes per file and
// bytes in all; a result cut by a bound says so (Truncated). Nothing is
// cached: each search reads the tree afresh, so it never answers from
// files that have since changed.
package codesearch
