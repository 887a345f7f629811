// Package files performs the runner's file operations: read, write, edit,
// list, stat, search, mkdir, move and remove.
//
// The container is the security boundary, not this package: the runner
// runs as a non-root user inside it, and a file operation may touch any
// path that user may touch, absolute paths included. Relative paths resolve
// against the workspace directory (default /workspace). What this package
// guards against is accidents, not escapes: it refuses to remove the
// workspace root or "/", does not follow symlinked directories while
// walking, and caps every result so one call cannot exhaust the runner's
// memory or the websocket.
//
// Every failure a user can cause is a *protocol.Error whose Code
// classifies it and whose message names the operation and the path and
// says what to do next, e.g.
//
//	read /workspace/x: file is 52 MiB, above the 10 MiB read cap; read a range with offset/limit or start_line/end_line
//
// Writes and edits replace files atomically (temporary file in the same
// directory, fsync, rename), so a reader never sees half a file and a
// failed write leaves the old content and no temporary file behind. An
// append (for a file sent in pieces) is the exception: it adds to the
// file in place, and a failed one takes back what it added.
package files
