package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/sandgate/sandgate/gateway/mcpapi"

	"github.com/sandgate/sandgate/runner/protocol"
)

type runShellArgs struct {
	Command string `json:"command" jsonschema:"Shell command, run by /bin/sh -c."`
	cwdArg
	envArg
	Stdin      string  `json:"stdin,omitempty" jsonschema:"Text to feed to the command's standard input."`
	Timeout    float64 `json:"timeout,omitempty" jsonschema:"Seconds before the command and everything it started are killed (default and maximum: the sandbox's call timeout, 60 s unless configured)."`
	Background bool    `json:"background,omitempty" jsonschema:"Start the command in the background and return a process_id at once; read its output with process_output and stop it with process_kill."`
	sandboxArg
}

// execOutput is the structuredContent of run_shell and run_code.
type execOutput struct {
	ExitCode        int    `json:"exit_code"`
	Signal          string `json:"signal,omitempty"`
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	StdoutTruncated bool   `json:"stdout_truncated"`
	StderrTruncated bool   `json:"stderr_truncated"`
	TimedOut        bool   `json:"timed_out"`
	OOMKilled       bool   `json:"oom_killed"`
	Canceled        bool   `json:"canceled,omitempty"`
	DurationMs      int64  `json:"duration_ms"`
	CPUMs           int64  `json:"cpu_ms"`
	MemoryPeakBytes int64  `json:"memory_peak_bytes"`
	Message         string `json:"message,omitempty"`
	ProcessID       string `json:"process_id,omitempty"`
}

func execTools() []toolDef {
	return append([]toolDef{
		{category: catExec, needsBox: true, summary: summarize("command", "cwd"), run: runShell,
			tool: mcpapi.NewTool("run_shell", argsSchema[runShellArgs](), mcpapi.WithReadOnlyHintAnnotation(false), mcpapi.WithDestructiveHintAnnotation(true),
				mcpapi.WithDescription("Run a shell command in the sandbox (network only through its egress proxy, to what its allowlist allows). Output streams as progress/log notifications while it runs; the result carries exit code, capped stdout/stderr (1 MiB each), duration, CPU time and memory peak. isError is set when the command exits non-zero, times out, is killed or runs out of memory. When the command exits, everything it started is killed; use background for servers."))},
	}, processTools()...)
}

// timeoutMs converts the timeout argument, refusing nonsense rather than
// guessing; 0, or more than the call timeout, is the call timeout.
func (c *call) timeoutMs(seconds float64) (int64, error) {
	d, err := secondsUpTo(seconds, c.g.cfg.Limits.CallTimeout)
	return d.Milliseconds(), err
}

// millis converts seconds to milliseconds, saturating where int64 ends
// (the runner then says the wait is longer than the call may last);
// negative stays negative, which the runner refuses.
func millis(seconds float64) int64 {
	if ms := seconds * 1000; ms < math.MaxInt64 {
		return int64(ms)
	}
	return math.MaxInt64
}

// secondsUpTo converts a timeout argument of seconds into a Duration of
// at most limit; 0, or anything above limit, is limit. The comparison is
// made on the float, before any conversion: a float beyond int64's range
// converts to an unspecified Duration (math.MinInt64 on amd64), which
// would slip under any limit.
func secondsUpTo(seconds float64, limit time.Duration) (time.Duration, error) {
	if seconds < 0 {
		return 0, fmt.Errorf("timeout %v is negative; give seconds, e.g. 30", seconds)
	}
	if seconds >= limit.Seconds() {
		return limit, nil
	}
	if d := time.Duration(seconds * float64(time.Second)); d > 0 {
		return d, nil
	}
	return limit, nil
}

func runShell(ctx context.Context, c *call) (*mcpapi.CallToolResult, error) {
	a, err := bind[runShellArgs](c)
	if err != nil {
		return nil, err
	}
	req := protocol.ExecRequest{Command: a.Command, Cwd: a.Cwd, Env: a.Env, Stdin: []byte(a.Stdin)}
	if strings.TrimSpace(a.Command) == "" {
		return nil, fmt.Errorf("command is empty; pass the shell command to run")
	}
	if a.Background {
		// A background process may run as long as its sandbox; a
		// timeout above that means the same.
		if a.Timeout != 0 {
			d, err := secondsUpTo(a.Timeout, c.g.cfg.Limits.MaxLifetime)
			if err != nil {
				return nil, err
			}
			req.TimeoutMs = d.Milliseconds()
		}
		var info protocol.ProcessInfo
		if err := c.runner.Call(ctx, protocol.OpProcessStart, req, &info); err != nil {
			return nil, err
		}
		return structured(execOutput{ProcessID: info.ID, ExitCode: 0}, fmt.Sprintf("started %s (pid %d) in the background; read its output with process_output {process_id: %q}", info.ID, info.Pid, info.ID), false), nil
	}
	if req.TimeoutMs, err = c.timeoutMs(a.Timeout); err != nil {
		return nil, err
	}
	return c.stream(ctx, protocol.OpExec, req, req.TimeoutMs)
}

// stream runs a streaming runner operation (exec or code) and builds the
// result from its output and final status.
func (c *call) stream(ctx context.Context, op protocol.Op, params any, timeoutMs int64) (*mcpapi.CallToolResult, error) {
	o, err := c.execStream(ctx, op, params, timeoutMs)
	if err != nil {
		return nil, err
	}
	return structured(o, execText(o), o.failed()), nil
}

// execStream runs a streaming runner operation, sending its output as
// notifications while it runs, and returns how it ended.
func (c *call) execStream(ctx context.Context, op protocol.Op, params any, timeoutMs int64) (execOutput, error) {
	// Backstop: the runner enforces the timeout; this bounds the wait if
	// the runner itself stops answering.
	ctx, cancel := context.WithTimeout(ctx, time.Duration(timeoutMs)*time.Millisecond+30*time.Second)
	defer cancel()
	// Replacement characters can make decoded text slightly longer than
	// the runner's byte cap; the margin keeps an honest runner's output.
	out := newOutput(c.req, protocol.DefaultOutputCap+protocol.DefaultOutputCap/8)
	raw, err := c.runner.Stream(ctx, op, params, out.event)
	out.flush()
	if err != nil {
		out.settle(err.Error())
		return execOutput{}, err
	}
	var r protocol.ExecResult
	if err := json.Unmarshal(raw, &r); err != nil {
		out.settle("the runner's result could not be read")
		return execOutput{}, fmt.Errorf("decode %s result: %w", op, err)
	}
	o := execOutput{ExitCode: r.ExitCode, Signal: r.Signal, Stdout: out.stdout.String(), Stderr: out.stderr.String(),
		StdoutTruncated: r.StdoutTruncated || out.over[0], StderrTruncated: r.StderrTruncated || out.over[1], TimedOut: r.TimedOut, OOMKilled: r.OOMKilled,
		Canceled: r.Canceled, DurationMs: r.DurationMs, CPUMs: r.CPUMs, MemoryPeakBytes: r.MemoryPeakBytes, Message: r.Message}
	c.recordExec(o)
	// Every output notification is written before the result (see settle).
	out.settle(statusLine(o))
	return o, nil
}

// failed reports whether the command did not end well.
func (o execOutput) failed() bool {
	return o.ExitCode != 0 || o.TimedOut || o.OOMKilled || o.Canceled || o.Signal != ""
}

// recordExec copies the outcome into the tool.end audit record.
func (c *call) recordExec(o execOutput) {
	e := c.end
	code := o.ExitCode
	e.ExitCode, e.CPUMs, e.MemoryPeakBytes, e.OOMKilled, e.TimedOut = &code, o.CPUMs, o.MemoryPeakBytes, o.OOMKilled, o.TimedOut
	switch {
	case o.OOMKilled:
		e.Outcome = "oom"
	case o.TimedOut:
		e.Outcome = "timeout"
	case o.Canceled:
		e.Outcome = "canceled"
	case o.ExitCode != 0 || o.Signal != "":
		e.Outcome = "error"
	default:
		e.Outcome = "ok"
	}
	if o.Message != "" {
		e.Error = o.Message
	}
}

// execText is the text content: the output, then one status line.
func execText(o execOutput) string {
	var b strings.Builder
	b.WriteString(o.Stdout)
	if o.StdoutTruncated {
		b.WriteString("\n[stdout truncated at the 1 MiB cap]")
	}
	if o.Stderr != "" {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString("[stderr]\n")
		b.WriteString(o.Stderr)
	}
	if o.StderrTruncated {
		b.WriteString("\n[stderr truncated at the 1 MiB cap]")
	}
	if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
		b.WriteString("\n")
	}
	b.WriteString(statusLine(o))
	return b.String()
}

// statusLine is the last line of the text content: how the command ended.
func statusLine(o execOutput) string {
	status := fmt.Sprintf("[exit code %d, %d ms]", o.ExitCode, o.DurationMs)
	if o.Signal != "" {
		status = fmt.Sprintf("[killed by %s, %d ms]", o.Signal, o.DurationMs)
	}
	if o.Message != "" {
		status += " " + o.Message
	}
	return status
}
