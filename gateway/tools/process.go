package tools

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/sandgate/sandgate/gateway/mcpapi"

	"github.com/sandgate/sandgate/runner/protocol"
)

type processListArgs struct {
	sandboxArg
}

type processOutputArgs struct {
	ProcessID string `json:"process_id" jsonschema:"Background process id from run_shell with background."`
	Offset    int64  `json:"offset,omitempty" jsonschema:"Read output from this position (pass the previous next_offset to read only new output)."`
	sandboxArg
}

type processKillArgs struct {
	processIDArg
	Signal string `json:"signal,omitempty" jsonschema:"Signal name or number, e.g. SIGTERM (default), SIGINT, SIGKILL, 9."`
	sandboxArg
}

// processOutputResult is process_output's structuredContent: the
// runner's answer with output as text.
type processOutputResult struct {
	Process    protocol.ProcessInfo `json:"process"`
	Stdout     string               `json:"stdout"`
	Stderr     string               `json:"stderr"`
	Offset     int64                `json:"offset"`
	NextOffset int64                `json:"next_offset"`
	Dropped    int64                `json:"dropped"`
	More       bool                 `json:"more"`
}

func processTools() []toolDef {
	return []toolDef{
		{category: catExec, needsBox: true, summary: summarize(), run: runProcessList,
			tool: mcpapi.NewTool("process_list", argsSchema[processListArgs](), mcpapi.WithReadOnlyHintAnnotation(true), mcpapi.WithDestructiveHintAnnotation(false),
				mcpapi.WithDescription("List the sandbox's background processes, running and exited, with exit status."))},
		{category: catExec, needsBox: true, summary: summarize("process_id"), run: runProcessOutput,
			tool: mcpapi.NewTool("process_output", argsSchema[processOutputArgs](), mcpapi.WithReadOnlyHintAnnotation(true), mcpapi.WithDestructiveHintAnnotation(false),
				mcpapi.WithDescription("Read a background process's output (stdout and stderr) from an offset; returns next_offset to continue from, and the process's status."))},
		{category: catExec, needsBox: true, summary: summarize("process_id", "signal"), run: runProcessKill,
			tool: mcpapi.NewTool("process_kill", argsSchema[processKillArgs](), mcpapi.WithReadOnlyHintAnnotation(false), mcpapi.WithDestructiveHintAnnotation(true),
				mcpapi.WithDescription("Send a signal (default SIGTERM) to a background process and everything it started."))},
		processInputTool(),
	}
}

func runProcessList(ctx context.Context, c *call) (*mcpapi.CallToolResult, error) {
	return unaryTool(ctx, c, protocol.OpProcessList, struct{}{}, func(r protocol.ProcessList) string {
		if len(r.Processes) == 0 {
			return "no background processes"
		}
		var b strings.Builder
		for _, p := range r.Processes {
			fmt.Fprintf(&b, "%s pid %d %s: %s\n", p.ID, p.Pid, processState(p), p.Command)
		}
		return b.String()
	})
}

func processState(p protocol.ProcessInfo) string {
	switch {
	case p.Running:
		return "running"
	case p.Signal != "":
		return "killed by " + p.Signal
	case p.ExitCode != nil:
		return fmt.Sprintf("exited %d", *p.ExitCode)
	}
	return "exited"
}

func runProcessOutput(ctx context.Context, c *call) (*mcpapi.CallToolResult, error) {
	a, err := bind[processOutputArgs](c)
	if err != nil {
		return nil, err
	}
	var r protocol.ProcessOutput
	if err := c.runner.Call(ctx, protocol.OpProcessOutput, protocol.ProcessOutputRequest{ID: a.ProcessID, Offset: a.Offset}, &r); err != nil {
		return nil, err
	}
	res := processOutputResult{Process: r.Process, Stdout: validText(r.Stdout), Stderr: validText(r.Stderr),
		Offset: r.Offset, NextOffset: r.NextOffset, Dropped: r.Dropped, More: r.More}
	text := res.Stdout
	if res.Stderr != "" {
		text += "[stderr]\n" + res.Stderr
	}
	text += fmt.Sprintf("\n[%s; next_offset %d]", processState(r.Process), r.NextOffset)
	if r.Dropped > 0 {
		text += fmt.Sprintf(" [%d older bytes were dropped]", r.Dropped)
	}
	return structured(res, text, false), nil
}

func validText(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

func runProcessKill(ctx context.Context, c *call) (*mcpapi.CallToolResult, error) {
	a, err := bind[processKillArgs](c)
	if err != nil {
		return nil, err
	}
	return unaryTool(ctx, c, protocol.OpProcessSignal, protocol.ProcessSignalRequest{ID: a.ProcessID, Signal: a.Signal}, func(r protocol.ProcessInfo) string {
		return fmt.Sprintf("signalled %s (pid %d): %s", r.ID, r.Pid, processState(r))
	})
}

type processInputArgs struct {
	processIDArg
	Data  string `json:"data,omitempty" jsonschema:"Text to write to the process's standard input."`
	Close bool   `json:"close,omitempty" jsonschema:"Close standard input after writing (sends end-of-file)."`
	sandboxArg
}

func processInputTool() toolDef {
	return toolDef{category: catExec, needsBox: true, summary: summarize("process_id"), run: runProcessInput,
		tool: mcpapi.NewTool("process_input", argsSchema[processInputArgs](), mcpapi.WithReadOnlyHintAnnotation(false), mcpapi.WithDestructiveHintAnnotation(false),
			mcpapi.WithDescription("Write to a background process's standard input, optionally closing it afterwards."))}
}

func runProcessInput(ctx context.Context, c *call) (*mcpapi.CallToolResult, error) {
	a, err := bind[processInputArgs](c)
	if err != nil {
		return nil, err
	}
	req := protocol.ProcessWriteRequest{ID: a.ProcessID, Data: []byte(a.Data), Close: a.Close}
	return unaryTool(ctx, c, protocol.OpProcessWrite, req, func(r protocol.ProcessInfo) string {
		return fmt.Sprintf("wrote %d bytes to %s (%s)", len(a.Data), r.ID, processState(r))
	})
}
