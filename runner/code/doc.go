// Package code runs a snippet of code: it writes the snippet to a
// temporary file and runs it with the language's interpreter through a
// process.Manager, so a snippet streams, times out, is cancelled and has
// its process tree killed exactly like a command.
package code
