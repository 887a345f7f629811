package tools

import (
	"context"
	"fmt"

	"github.com/sandgate/sandgate/gateway/mcpapi"

	"github.com/sandgate/sandgate/runner/protocol"
)

type readFileArgs struct {
	Path      string `json:"path" jsonschema:"File to read; relative paths resolve against /workspace."`
	Offset    int64  `json:"offset,omitempty" jsonschema:"Byte offset to start reading at."`
	Limit     int64  `json:"limit,omitempty" jsonschema:"Maximum bytes to read (default: up to the 10 MiB cap)."`
	StartLine int    `json:"start_line,omitempty" jsonschema:"First line to read (1-based); use instead of offset/limit."`
	EndLine   int    `json:"end_line,omitempty" jsonschema:"Last line to read (inclusive; default: end of file)."`
	Encoding  string `json:"encoding,omitempty" jsonschema:"text (default) or base64. Binary content is returned base64 either way."`
	sandboxArg
}

type writeFileArgs struct {
	Path     string `json:"path" jsonschema:"File to write; parent directories are created."`
	Content  string `json:"content" jsonschema:"The whole new content."`
	Encoding string `json:"encoding,omitempty" jsonschema:"text (default) or base64 for binary content."`
	Mode     string `json:"mode,omitempty" jsonschema:"Octal permission bits, e.g. 0755 (default: keep the existing mode, 0644 for new files)."`
	sandboxArg
}

type editFileArgs struct {
	Path       string `json:"path" jsonschema:"File to edit."`
	OldString  string `json:"old_string,omitempty" jsonschema:"Exact text to replace; must occur exactly once unless replace_all."`
	NewString  string `json:"new_string,omitempty" jsonschema:"Replacement text."`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema:"Replace every occurrence of old_string."`
	InsertLine int    `json:"insert_line,omitempty" jsonschema:"Insert text before this line (1-based; one past the last line appends)."`
	Text       string `json:"text,omitempty" jsonschema:"Lines to insert at insert_line."`
	StartLine  int    `json:"start_line,omitempty" jsonschema:"First line to delete (1-based), with end_line."`
	EndLine    int    `json:"end_line,omitempty" jsonschema:"Last line to delete (inclusive)."`
	sandboxArg
}

type listDirectoryArgs struct {
	Path   string `json:"path,omitempty" jsonschema:"Directory to list (default /workspace)."`
	Depth  int    `json:"depth,omitempty" jsonschema:"How many levels to descend (default 1)."`
	Hidden bool   `json:"hidden,omitempty" jsonschema:"Include entries whose name starts with a dot."`
	sandboxArg
}

type fileInfoArgs struct {
	Path string `json:"path" jsonschema:"File or directory to describe."`
	sandboxArg
}

type searchFilesArgs struct {
	Pattern string `json:"pattern" jsonschema:"Regular expression (RE2 syntax) to search file contents for."`
	searchPathArg
	Glob       string `json:"glob,omitempty" jsonschema:"Only files whose name matches, e.g. *.py."`
	MaxResults int    `json:"max_results,omitempty" jsonschema:"Stop after this many matching lines (default 100)."`
	IgnoreCase bool   `json:"ignore_case,omitempty" jsonschema:"Match case-insensitively."`
	sandboxArg
}

func fileTools() []toolDef {
	return []toolDef{
		{category: catFiles, needsBox: true, summary: summarize("path", "encoding"), run: runReadFile,
			tool: mcpapi.NewTool("read_file", argsSchema[readFileArgs](), mcpapi.WithReadOnlyHintAnnotation(true), mcpapi.WithDestructiveHintAnnotation(false),
				mcpapi.WithDescription("Read a file in the sandbox. The text content is the file's text (base64 when encoding is base64 or the file is binary). Read part of a large file with offset/limit (bytes) or start_line/end_line. Files above 10 MiB must be read in ranges."))},
		{category: catFiles, needsBox: true, summary: summarize("path", "encoding", "mode"), run: runWriteFile,
			tool: mcpapi.NewTool("write_file", argsSchema[writeFileArgs](), mcpapi.WithReadOnlyHintAnnotation(false), mcpapi.WithDestructiveHintAnnotation(true), mcpapi.WithIdempotentHintAnnotation(true),
				mcpapi.WithDescription("Create or replace a file in the sandbox atomically, creating parent directories."))},
		{category: catFiles, needsBox: true, summary: summarize("path"), run: runEditFile,
			tool: mcpapi.NewTool("edit_file", argsSchema[editFileArgs](), mcpapi.WithReadOnlyHintAnnotation(false), mcpapi.WithDestructiveHintAnnotation(true),
				mcpapi.WithDescription("Edit a file in one of three ways: replace old_string with new_string (old_string must match exactly once unless replace_all); insert text before insert_line; or delete start_line..end_line."))},
		{category: catFiles, needsBox: true, summary: summarize("path"), run: runListDirectory,
			tool: mcpapi.NewTool("list_directory", argsSchema[listDirectoryArgs](), mcpapi.WithReadOnlyHintAnnotation(true), mcpapi.WithDestructiveHintAnnotation(false),
				mcpapi.WithDescription("List a directory in the sandbox with sizes and types, optionally recursively (depth) and including hidden entries."))},
		{category: catFiles, needsBox: true, summary: summarize("path"), run: runFileInfo,
			tool: mcpapi.NewTool("file_info", argsSchema[fileInfoArgs](), mcpapi.WithReadOnlyHintAnnotation(true), mcpapi.WithDestructiveHintAnnotation(false),
				mcpapi.WithDescription("Describe a file or directory: type, size, permissions, modification time, symlink target."))},
		{category: catFiles, needsBox: true, summary: summarize("pattern", "path", "glob"), run: runSearchFiles,
			tool: mcpapi.NewTool("search_files", argsSchema[searchFilesArgs](), mcpapi.WithReadOnlyHintAnnotation(true), mcpapi.WithDestructiveHintAnnotation(false),
				mcpapi.WithDescription("Search file contents in the sandbox with a regular expression; returns matching lines with file and line number. Binary files, hidden directories and files above 10 MiB are skipped."))},
	}
}

// unaryTool runs one request/response runner operation and renders its
// result as structured content plus text.
func unaryTool[Res any](ctx context.Context, c *call, op protocol.Op, params any, text func(Res) string) (*mcpapi.CallToolResult, error) {
	var res Res
	if err := c.runner.Call(ctx, op, params, &res); err != nil {
		return nil, err
	}
	return structured(res, text(res), false), nil
}

func runReadFile(ctx context.Context, c *call) (*mcpapi.CallToolResult, error) {
	a, err := bind[readFileArgs](c)
	if err != nil {
		return nil, err
	}
	req := protocol.ReadRequest{Path: a.Path, Offset: a.Offset, Limit: a.Limit, StartLine: a.StartLine, EndLine: a.EndLine, Encoding: a.Encoding}
	res, data, err := c.readFile(ctx, req)
	if err != nil {
		return nil, err
	}
	// The content goes once, as the text content; structuredContent is
	// the metadata (path, size, range, encoding), not a second copy.
	content := res.Content
	if data != nil {
		content = protocol.RenderContent(data, res.Encoding)
	}
	res.Content, res.Data = "", nil
	return structured(res, content, false), nil
}

func runWriteFile(ctx context.Context, c *call) (*mcpapi.CallToolResult, error) {
	a, err := bind[writeFileArgs](c)
	if err != nil {
		return nil, err
	}
	req := protocol.WriteRequest{Path: a.Path, Encoding: a.Encoding}
	if req.Mode, err = parseMode(a.Mode); err != nil {
		return nil, err
	}
	var res protocol.WriteResult
	if c.runner.Payloads() && len(a.Content) >= protocol.PayloadMinBytes {
		// The bytes go beside the JSON, not escaped inside it.
		_, err = c.runner.CallPayload(ctx, protocol.OpFileWrite, req, []byte(a.Content), &res)
	} else {
		req.Content = a.Content
		err = c.runner.Call(ctx, protocol.OpFileWrite, req, &res)
	}
	if err != nil {
		return nil, err
	}
	return structured(res, fmt.Sprintf("wrote %d bytes to %s", res.Bytes, res.Path), false), nil
}

func runEditFile(ctx context.Context, c *call) (*mcpapi.CallToolResult, error) {
	a, err := bind[editFileArgs](c)
	if err != nil {
		return nil, err
	}
	req := protocol.EditRequest{Path: a.Path, OldString: a.OldString, NewString: a.NewString, ReplaceAll: a.ReplaceAll,
		InsertLine: a.InsertLine, Text: a.Text, StartLine: a.StartLine, EndLine: a.EndLine}
	return unaryTool(ctx, c, protocol.OpFileEdit, req, func(r protocol.EditResult) string {
		return fmt.Sprintf("edited %s: %d replacement(s), %d line(s) added, %d removed; now %d lines", r.Path, r.Replacements, r.LinesAdded, r.LinesRemoved, r.TotalLines)
	})
}

func runListDirectory(ctx context.Context, c *call) (*mcpapi.CallToolResult, error) {
	a, err := bind[listDirectoryArgs](c)
	if err != nil {
		return nil, err
	}
	req := protocol.ListRequest{Path: a.Path, Depth: a.Depth, Hidden: a.Hidden}
	if req.Path == "" {
		// The runner's workspace, as the runner resolves it: /workspace
		// in every container, but the runner decides, not the gateway (on
		// the in-process provider it is a temp dir on the host, and
		// "/workspace" would be the host's).
		req.Path = "."
	}
	return unaryTool(ctx, c, protocol.OpFileList, req, ListingText)
}

func ListingText(r protocol.ListResult) string {
	out := ""
	for _, e := range r.Entries {
		line := fmt.Sprintf("%s %10d %s", e.Mode, e.Size, e.Path)
		if e.Type == protocol.TypeDir {
			line += "/"
		}
		if e.Target != "" {
			line += " -> " + e.Target
		}
		out += line + "\n"
	}
	if r.Truncated {
		out += "[listing truncated]\n"
	}
	if out == "" {
		out = "(empty directory)"
	}
	return out
}

func runFileInfo(ctx context.Context, c *call) (*mcpapi.CallToolResult, error) {
	a, err := bind[fileInfoArgs](c)
	if err != nil {
		return nil, err
	}
	return unaryTool(ctx, c, protocol.OpFileStat, protocol.PathRequest{Path: a.Path}, func(r protocol.FileInfo) string { return jsonText(r) })
}

func runSearchFiles(ctx context.Context, c *call) (*mcpapi.CallToolResult, error) {
	a, err := bind[searchFilesArgs](c)
	if err != nil {
		return nil, err
	}
	req := protocol.SearchRequest{Pattern: a.Pattern, Path: a.Path, Glob: a.Glob, MaxResults: a.MaxResults, IgnoreCase: a.IgnoreCase}
	return unaryTool(ctx, c, protocol.OpFileSearch, req, func(r protocol.SearchResult) string {
		out := ""
		for _, m := range r.Matches {
			out += fmt.Sprintf("%s:%d:%s\n", m.Path, m.Line, m.Text)
		}
		if r.Truncated {
			out += "[results truncated; narrow the pattern, path or glob]\n"
		}
		if out == "" {
			out = fmt.Sprintf("no matches in %d files", r.FilesScanned)
		}
		return out
	})
}
