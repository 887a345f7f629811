package tools

import (
	"context"
	"fmt"
	"strconv"

	"github.com/sandgate/sandgate/gateway/mcpapi"

	"github.com/sandgate/sandgate/runner/protocol"
)

type makeDirectoryArgs struct {
	Path string `json:"path" jsonschema:"Directory to create, with its parents."`
	Mode string `json:"mode,omitempty" jsonschema:"Octal permission bits (default 0755)."`
	sandboxArg
}

type movePathArgs struct {
	From      string `json:"from" jsonschema:"File or directory to move."`
	To        string `json:"to" jsonschema:"New path; its parent directories are created."`
	Overwrite bool   `json:"overwrite,omitempty" jsonschema:"Replace an existing destination."`
	sandboxArg
}

type removePathArgs struct {
	Path      string `json:"path" jsonschema:"File or directory to remove."`
	Recursive bool   `json:"recursive,omitempty" jsonschema:"Remove a non-empty directory and everything in it."`
	sandboxArg
}

func pathTools() []toolDef {
	return []toolDef{
		{category: catFiles, needsBox: true, summary: summarize("path", "mode"), run: runMakeDirectory,
			tool: mcpapi.NewTool("make_directory", argsSchema[makeDirectoryArgs](), mcpapi.WithReadOnlyHintAnnotation(false), mcpapi.WithDestructiveHintAnnotation(false), mcpapi.WithIdempotentHintAnnotation(true),
				mcpapi.WithDescription("Create a directory and any missing parents in the sandbox."))},
		{category: catFiles, needsBox: true, summary: summarize("from", "to"), run: runMovePath,
			tool: mcpapi.NewTool("move_path", argsSchema[movePathArgs](), mcpapi.WithReadOnlyHintAnnotation(false), mcpapi.WithDestructiveHintAnnotation(true),
				mcpapi.WithDescription("Move or rename a file or directory in the sandbox. An existing destination is an error unless overwrite."))},
		{category: catFiles, needsBox: true, summary: summarize("path"), run: runRemovePath,
			tool: mcpapi.NewTool("remove_path", argsSchema[removePathArgs](), mcpapi.WithReadOnlyHintAnnotation(false), mcpapi.WithDestructiveHintAnnotation(true),
				mcpapi.WithDescription("Remove a file or empty directory in the sandbox; recursive removes a whole tree. The workspace root itself cannot be removed."))},
	}
}

// parseMode reads octal permission bits like "0755" or "644".
func parseMode(s string) (uint32, error) {
	if s == "" {
		return 0, nil
	}
	m, err := strconv.ParseUint(s, 8, 32)
	if err != nil || m > 0o7777 {
		return 0, fmt.Errorf("mode %q is not octal permission bits; write it like 0644 or 755", s)
	}
	return uint32(m), nil
}

func runMakeDirectory(ctx context.Context, c *call) (*mcpapi.CallToolResult, error) {
	a, err := bind[makeDirectoryArgs](c)
	if err != nil {
		return nil, err
	}
	mode, err := parseMode(a.Mode)
	if err != nil {
		return nil, err
	}
	return unaryTool(ctx, c, protocol.OpFileMkdir, protocol.MkdirRequest{Path: a.Path, Mode: mode}, func(r protocol.FileInfo) string {
		return "created directory " + r.Path
	})
}

func runMovePath(ctx context.Context, c *call) (*mcpapi.CallToolResult, error) {
	a, err := bind[movePathArgs](c)
	if err != nil {
		return nil, err
	}
	return unaryTool(ctx, c, protocol.OpFileMove, protocol.MoveRequest{From: a.From, To: a.To, Overwrite: a.Overwrite}, func(r protocol.FileInfo) string {
		return fmt.Sprintf("moved %s to %s", a.From, r.Path)
	})
}

func runRemovePath(ctx context.Context, c *call) (*mcpapi.CallToolResult, error) {
	a, err := bind[removePathArgs](c)
	if err != nil {
		return nil, err
	}
	return unaryTool(ctx, c, protocol.OpFileRemove, protocol.RemoveRequest{Path: a.Path, Recursive: a.Recursive}, func(r protocol.RemoveResult) string {
		return fmt.Sprintf("removed %s (%d entries)", r.Path, r.Removed)
	})
}
