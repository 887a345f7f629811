// Package manifest reads the operator's custom tool manifests: one JSON
// file per tool, naming the command to run inside a sandbox with the
// call's arguments as JSON on its standard input.
//
// Parse checks one file and reports every problem it finds, each naming
// the file and the field. Dir loads a directory of them and reloads it
// all-or-nothing per file: a file that stops parsing keeps its previous
// good version, or none, and says which.
package manifest
