package tools

import (
	"context"

	"github.com/sandgate/sandgate/gateway/mcpapi"

	"github.com/sandgate/sandgate/runner/protocol"
)

type runCodeArgs struct {
	Language string  `json:"language" jsonschema:"python, node or bash (also accepted: python3, py, javascript, js, nodejs, sh)."`
	Code     string  `json:"code" jsonschema:"The program to run."`
	Timeout  float64 `json:"timeout,omitempty" jsonschema:"Seconds before the program and everything it started are killed (default and maximum: the call timeout). With stateful the cell is interrupted (KeyboardInterrupt) instead and the interpreter keeps its state."`
	Stdin    string  `json:"stdin,omitempty" jsonschema:"Text for standard input."`
	envArg
	cwdArg
	Stateful bool `json:"stateful,omitempty" jsonschema:"Python only: run the code in the sandbox's long-lived interpreter, which keeps variables, imports and definitions between calls like notebook cells. Output comes with the result instead of streaming; stdin, env and cwd do not apply."`
	sandboxArg
}

func codeTools() []toolDef {
	return []toolDef{
		{category: catCode, needsBox: true, summary: summarize("language"), run: runCode,
			tool: mcpapi.NewTool("run_code", argsSchema[runCodeArgs](), mcpapi.WithReadOnlyHintAnnotation(false), mcpapi.WithDestructiveHintAnnotation(true),
				mcpapi.WithDescription("Run a snippet of python, node or bash in the sandbox, with the same streaming, limits and result as run_shell. With stateful (python only) the snippet runs in the sandbox's long-lived interpreter instead: state persists between calls, the value of a final expression is returned as result, matplotlib figures as PNG images, an exception as a traceback (isError); interpreter_restart clears the state."))},
		interpRestartTool(),
	}
}

func runCode(ctx context.Context, c *call) (*mcpapi.CallToolResult, error) {
	a, err := bind[runCodeArgs](c)
	if err != nil {
		return nil, err
	}
	lang, err := protocol.ParseLanguage(a.Language)
	if err != nil {
		return nil, err
	}
	a.Language = string(lang)
	timeout, err := c.timeoutMs(a.Timeout)
	if err != nil {
		return nil, err
	}
	if a.Stateful {
		return runStateful(ctx, c, a, timeout)
	}
	req := protocol.CodeRequest{Language: a.Language, Code: a.Code, Cwd: a.Cwd, Env: a.Env, Stdin: []byte(a.Stdin), TimeoutMs: timeout}
	return c.stream(ctx, protocol.OpCode, req, timeout)
}
