package tools

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sandgate/sandgate/gateway/mcpapi"

	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/runner/protocol"
)

// interpSlack is what the gateway's backstop adds to a stateful call's
// timeout: the runner's interrupt grace and, after a stuck cell, the start
// of a new interpreter.
const interpSlack = 60 * time.Second

// maxFigureBytes bounds the PNG a (possibly compromised) runner can make
// one result carry, as the runner bounds an honest cell's figures.
const maxFigureBytes = 8 << 20

var pngMagic = []byte("\x89PNG\r\n\x1a\n")

// interpOutput is the structuredContent of run_code with stateful and of
// interpreter_restart.
type interpOutput struct {
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	Result     string `json:"result"` // repr of the final expression
	HasResult  bool   `json:"has_result"`
	Error      string `json:"error,omitempty"` // traceback
	ErrorName  string `json:"error_name,omitempty"`
	Figures    int    `json:"figures"` // PNG images in the content
	TimedOut   bool   `json:"timed_out"`
	Restarted  bool   `json:"restarted"` // earlier state is gone
	DurationMs int64  `json:"duration_ms"`
	Message    string `json:"message,omitempty"`
}

type interpRestartArgs struct {
	Language string `json:"language,omitempty" jsonschema:"The interpreter to restart: python (the default and only one)."`
	sandboxArg
}

func interpRestartTool() toolDef {
	return toolDef{category: catCode, needsBox: true, summary: summarize("language"), run: runInterpRestart,
		tool: mcpapi.NewTool("interpreter_restart", argsSchema[interpRestartArgs](), mcpapi.WithReadOnlyHintAnnotation(false), mcpapi.WithDestructiveHintAnnotation(true),
			mcpapi.WithDescription("Restart the sandbox's stateful python interpreter (run_code with stateful): every variable, import and definition is gone afterwards. A running cell is waited for first."))}
}

// runStateful runs a run_code call with stateful in the sandbox's
// interpreter.
func runStateful(ctx context.Context, c *call, a runCodeArgs, timeoutMs int64) (*mcpapi.CallToolResult, error) {
	if a.Language != string(protocol.Python) {
		return nil, fmt.Errorf("stateful runs python only; run %s code without stateful", a.Language)
	}
	if a.Stdin != "" || len(a.Env) > 0 || a.Cwd != "" {
		return nil, errors.New("stdin, env and cwd do not apply with stateful: the interpreter is one process for every call; set os.environ or call os.chdir in the code instead")
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(timeoutMs)*time.Millisecond+interpSlack)
	defer cancel()
	var r protocol.InterpResult
	req := protocol.InterpRequest{Language: a.Language, Code: a.Code, TimeoutMs: timeoutMs}
	if err := c.runner.Call(ctx, protocol.OpInterpRun, req, &r); err != nil {
		return nil, interpError(err)
	}
	o := interpOutput{Stdout: r.Stdout, Stderr: r.Stderr, Result: r.Result, HasResult: r.HasResult, Error: r.Error, ErrorName: r.ErrorName,
		TimedOut: r.TimedOut, Restarted: r.Restarted, DurationMs: r.DurationMs, Message: r.Message}
	var images []mcpapi.Content
	total := 0
	for _, png := range r.Figures {
		if !bytes.HasPrefix(png, pngMagic) || total+len(png) > maxFigureBytes {
			continue
		}
		total += len(png)
		images = append(images, mcpapi.NewImageContent(base64.StdEncoding.EncodeToString(png), "image/png"))
	}
	o.Figures = len(images)
	c.recordInterp(o)
	res := structured(o, interpText(o), o.Error != "" || o.TimedOut)
	res.Content = append(res.Content, images...)
	return res, nil
}

func runInterpRestart(ctx context.Context, c *call) (*mcpapi.CallToolResult, error) {
	a, err := bind[interpRestartArgs](c)
	if err != nil {
		return nil, err
	}
	lang := protocol.Python
	if a.Language != "" {
		if lang, err = protocol.ParseLanguage(a.Language); err != nil {
			return nil, err
		}
	}
	if lang != protocol.Python {
		return nil, fmt.Errorf("language %q has no stateful interpreter; only python does", a.Language)
	}
	a.Language = string(lang)
	ctx, cancel := context.WithTimeout(ctx, c.g.cfg.Limits.CallTimeout+interpSlack)
	defer cancel()
	var r protocol.InterpResult
	if err := c.runner.Call(ctx, protocol.OpInterpRestart, protocol.InterpRestartRequest{Language: a.Language}, &r); err != nil {
		return nil, interpError(err)
	}
	o := interpOutput{TimedOut: r.TimedOut, Restarted: r.Restarted, DurationMs: r.DurationMs, Message: r.Message}
	c.recordInterp(o)
	text := "restarted the python interpreter; earlier state is gone"
	if !o.Restarted {
		text = "[" + o.Message + "]"
	}
	return structured(o, text, o.TimedOut), nil
}

// interpError says what an image without python3 means for the user.
func interpError(err error) error {
	if protocol.CodeOf(err) == protocol.CodeUnsupported {
		return fmt.Errorf("this sandbox's image has no python3, so it has no stateful interpreter; run the code without stateful or use an image with python3 (%w)", err)
	}
	return err
}

// recordInterp copies the outcome into the tool.end audit record: error
// names and the runner's messages, never output or tracebacks, which may
// quote user data.
func (c *call) recordInterp(o interpOutput) {
	e := c.end
	e.TimedOut = o.TimedOut
	switch {
	case o.TimedOut:
		e.Outcome = "timeout"
	case o.Error != "":
		e.Outcome = "error"
	default:
		e.Outcome = "ok"
		return
	}
	what := []string{}
	for _, s := range []string{o.ErrorName, o.Message} {
		if s != "" {
			what = append(what, s)
		}
	}
	e.Error = audit.Clip(strings.Join(what, ": "), 500)
}

// interpText is the text content: stdout, stderr, the result's repr, the
// traceback, then a status line when there is something to say.
func interpText(o interpOutput) string {
	var parts []string
	if o.Stdout != "" {
		parts = append(parts, strings.TrimSuffix(o.Stdout, "\n"))
	}
	if o.Stderr != "" {
		parts = append(parts, "[stderr]\n"+strings.TrimSuffix(o.Stderr, "\n"))
	}
	if o.HasResult {
		parts = append(parts, o.Result)
	}
	if o.Error != "" {
		parts = append(parts, strings.TrimSuffix(o.Error, "\n"))
	}
	var status []string
	if o.Figures > 0 {
		status = append(status, fmt.Sprintf("%d figure(s) attached as PNG", o.Figures))
	}
	if o.Message != "" {
		status = append(status, o.Message)
	}
	if len(status) > 0 {
		parts = append(parts, "["+strings.Join(status, "; ")+"]")
	}
	if len(parts) == 0 {
		return "[no output]"
	}
	return strings.Join(parts, "\n")
}
