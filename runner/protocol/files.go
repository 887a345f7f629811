package protocol

import (
	"encoding/base64"
	"time"
)

// Encodings for file content on the wire.
const (
	EncodingText   = "text"   // UTF-8 text; the default
	EncodingBase64 = "base64" // raw bytes, base64 in Content
)

// ReadRequest reads a file. Byte range (Offset/Limit) and line range
// (StartLine/EndLine, 1-based, inclusive) are exclusive of each other.
// Content that is not valid UTF-8 is returned base64 even when Encoding is
// empty, and the result says so.
type ReadRequest struct {
	Path      string `json:"path"`
	Offset    int64  `json:"offset,omitempty"`
	Limit     int64  `json:"limit,omitempty"` // 0: up to MaxBytes
	StartLine int    `json:"start_line,omitempty"`
	EndLine   int    `json:"end_line,omitempty"` // 0: to the end
	Encoding  string `json:"encoding,omitempty"`
	MaxBytes  int64  `json:"max_bytes,omitempty"` // 0: the runner's default cap
	// Raw asks for the content's bytes as the result's payload (Data)
	// instead of Content; Encoding then says how the gateway must render
	// them: as text, or base64 when they are not UTF-8 or base64 was asked.
	Raw bool `json:"raw,omitempty"`
}

// ReadResult is the content of a file read.
type ReadResult struct {
	Path       string `json:"path"`
	Content    string `json:"content,omitempty"` // the gateway sends it as text content only
	Encoding   string `json:"encoding"`
	Size       int64  `json:"size"`   // size of the whole file
	Offset     int64  `json:"offset"` // byte offset of Content in the file
	Bytes      int64  `json:"bytes"`  // number of bytes in Content (decoded)
	StartLine  int    `json:"start_line,omitempty"`
	EndLine    int    `json:"end_line,omitempty"`
	TotalLines int    `json:"total_lines,omitempty"` // set for line reads
	EOF        bool   `json:"eof"`                   // Content reaches the end of the file
	// Data is the content's bytes when the request asked for Raw; it
	// travels as the payload.
	Data []byte `json:"-"`
}

// RenderContent turns a raw read's bytes (ReadResult.Data) into the
// Content they stand for, as the result's Encoding says.
func RenderContent(data []byte, encoding string) string {
	if encoding == EncodingBase64 {
		return base64.StdEncoding.EncodeToString(data)
	}
	return string(data)
}

// WriteRequest writes a whole file atomically (temp file + rename in the
// same directory), creating parent directories.
type WriteRequest struct {
	Path     string `json:"path"`
	Content  string `json:"content"`
	Encoding string `json:"encoding,omitempty"`
	Mode     uint32 `json:"mode,omitempty"` // 0: keep the existing mode, or 0644 for a new file
	// Append adds the content to the end of the file (creating it and its
	// parents if needed) instead of replacing the file atomically. It is
	// for writing a large file in pieces, into a temporary name that a
	// move then puts in place. Runners without FeatureAppend refuse it.
	Append bool `json:"append,omitempty"`
	// Data, when not nil, is Content as bytes (still in Encoding), sent
	// as the request's payload; Content is then empty.
	Data []byte `json:"-"`
}

// WriteResult describes a written file.
type WriteResult struct {
	Path    string `json:"path"`
	Bytes   int64  `json:"bytes"`
	Created bool   `json:"created"`
	Mode    uint32 `json:"mode"`
}

// EditRequest is one of three edits, chosen by which fields are set:
//   - replace: OldString (non-empty) → NewString; fails with CodeNoMatch
//     when absent and CodeNotUnique when it occurs more than once, unless
//     ReplaceAll;
//   - insert: InsertLine (1-based; the text goes before that line;
//     total_lines+1 appends) with Text;
//   - delete: StartLine..EndLine (1-based, inclusive).
type EditRequest struct {
	Path       string `json:"path"`
	OldString  string `json:"old_string,omitempty"`
	NewString  string `json:"new_string,omitempty"`
	ReplaceAll bool   `json:"replace_all,omitempty"`
	InsertLine int    `json:"insert_line,omitempty"`
	Text       string `json:"text,omitempty"`
	StartLine  int    `json:"start_line,omitempty"`
	EndLine    int    `json:"end_line,omitempty"`
}

// EditResult describes an applied edit.
type EditResult struct {
	Path         string `json:"path"`
	Replacements int    `json:"replacements,omitempty"`
	LinesAdded   int    `json:"lines_added,omitempty"`
	LinesRemoved int    `json:"lines_removed,omitempty"`
	TotalLines   int    `json:"total_lines"`
	Bytes        int64  `json:"bytes"`
}

// PathRequest names one path.
type PathRequest struct {
	Path string `json:"path"`
}

// File types in FileInfo.Type.
const (
	TypeFile    = "file"
	TypeDir     = "directory"
	TypeSymlink = "symlink"
	TypeOther   = "other"
)

// FileInfo describes one file system entry. Symlinks are not followed for
// Type; Target holds the link text.
type FileInfo struct {
	Path    string    `json:"path"`
	Name    string    `json:"name"`
	Type    string    `json:"type"`
	Size    int64     `json:"size"`
	Mode    string    `json:"mode"` // e.g. "-rw-r--r--"
	Perm    uint32    `json:"perm"` // permission bits, e.g. 0644
	ModTime time.Time `json:"mod_time"`
	Target  string    `json:"target,omitempty"`
}

// ListRequest lists a directory. Depth 1 (the default) lists direct
// children; hidden entries (name starting with ".") are skipped unless
// Hidden.
type ListRequest struct {
	Path       string `json:"path"`
	Depth      int    `json:"depth,omitempty"`
	Hidden     bool   `json:"hidden,omitempty"`
	MaxEntries int    `json:"max_entries,omitempty"` // 0: the runner's default cap
}

// ListResult is a directory listing in lexical order.
type ListResult struct {
	Path      string     `json:"path"`
	Entries   []FileInfo `json:"entries"`
	Truncated bool       `json:"truncated"`
}

// SearchRequest searches file contents with a Go (RE2) regular expression.
// Glob filters on the base name (e.g. "*.go"); hidden directories and files
// larger than the per-file cap are skipped; binary files are skipped.
type SearchRequest struct {
	Pattern    string `json:"pattern"`
	Path       string `json:"path,omitempty"` // default: the workspace
	Glob       string `json:"glob,omitempty"`
	MaxResults int    `json:"max_results,omitempty"` // 0: default 100
	IgnoreCase bool   `json:"ignore_case,omitempty"`
}

// SearchMatch is one matching line.
type SearchMatch struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	Text string `json:"text"` // the line, cut at a few hundred bytes
}

// SearchResult holds the matches found before any cap was reached.
type SearchResult struct {
	Matches      []SearchMatch `json:"matches"`
	FilesScanned int           `json:"files_scanned"`
	Truncated    bool          `json:"truncated"` // a result or byte cap stopped the search
}

// MkdirRequest creates a directory and its parents.
type MkdirRequest struct {
	Path string `json:"path"`
	Mode uint32 `json:"mode,omitempty"` // 0: 0755
}

// MoveRequest renames From to To. An existing To is an error unless
// Overwrite.
type MoveRequest struct {
	From      string `json:"from"`
	To        string `json:"to"`
	Overwrite bool   `json:"overwrite,omitempty"`
}

// RemoveRequest removes a file or an empty directory; Recursive removes a
// tree.
type RemoveRequest struct {
	Path      string `json:"path"`
	Recursive bool   `json:"recursive,omitempty"`
}

// RemoveResult says what was removed.
type RemoveResult struct {
	Path    string `json:"path"`
	Removed int    `json:"removed"` // entries removed
}
