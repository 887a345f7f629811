// Package watch reports changes to files and directories of the sandbox
// with inotify, debounced, for the runner's watch operation
// (protocol.OpWatch). Every watch is a directory watch: a file is
// watched through its parent directory, so that it survives atomic
// replacement (a write to a temporary name and a rename over it) and is
// seen when it first appears.
package watch
