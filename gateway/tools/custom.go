package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/sandgate/sandgate/gateway/mcpapi"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/gateway/manifest"
	"github.com/sandgate/sandgate/runner/protocol"
)

// catCustom is the category of operator tools that name none of the
// built-in categories.
const catCustom = manifest.CategoryCustom

// sandboxIDArg is the argument the gateway adds to every custom tool: it
// picks the sandbox, like every built-in sandbox tool's, and is not
// passed to the command.
const sandboxIDArg = "sandbox_id"

// ManifestOptions is the policy custom tool manifests are checked
// against: no timeout above callTimeout, and an input schema the MCP
// edge can serve (check).
func ManifestOptions(callTimeout time.Duration, check func(json.RawMessage) error) manifest.Options {
	return manifest.Options{Categories: AllCategories, Scopes: auth.AllScopes, MaxTimeout: callTimeout,
		Reserved: AllToolNames(), ReservedArguments: []string{sandboxIDArg}, CheckInputSchema: check}
}

// customToolDef makes a manifest a tool like the built-in ones: it goes
// through the same handler (rate limit, scope, audit, sandbox) and runs
// through the runner's exec operation, streaming its output. The schema
// it returns is the listed input schema, compiled.
func (g *Toolbox) customToolDef(m *manifest.Manifest) (toolDef, *jsonschema.Schema, error) {
	listed, err := withSandboxID(m.InputSchema)
	if err != nil {
		return toolDef{}, nil, err
	}
	sch, err := manifest.Compile(listed)
	if err != nil {
		return toolDef{}, nil, fmt.Errorf("compile input schema with %s: %w", sandboxIDArg, err)
	}
	readOnly := m.ReadOnly != nil && *m.ReadOnly
	destructive := !readOnly
	if m.Destructive != nil {
		destructive = *m.Destructive
	}
	tool := mcpapi.Tool{Name: m.Name, Description: m.Description + " Requires scope: " + m.Scope + ".",
		InputSchema: listed, OutputSchema: m.OutputSchema,
		Annotations: mcpapi.ToolAnnotation{ReadOnlyHint: readOnly, DestructiveHint: destructive, IdempotentHint: readOnly,
			// A command may use whatever egress the operator allows.
			OpenWorldHint: g.cfg.EgressPolicy.AllowsAny()}}
	command := audit.Clip(strings.Join(m.Command, " "), 200)
	d := toolDef{category: m.Category, tool: tool, needsBox: true, scopes: []string{m.Scope},
		// Arguments may hold anything; the audit record names only the
		// operator's command.
		summary: func(map[string]any) map[string]string { return map[string]string{"command": command} },
		run:     func(ctx context.Context, c *call) (*mcpapi.CallToolResult, error) { return runCustom(ctx, c, m) }}
	return d, sch, nil
}

// withSandboxID adds the sandbox_id property to an input schema.
func withSandboxID(schema json.RawMessage) (json.RawMessage, error) {
	var obj map[string]any
	if err := json.Unmarshal(schema, &obj); err != nil {
		return nil, fmt.Errorf("decode input schema: %w", err)
	}
	props, _ := obj["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
	}
	props[sandboxIDArg] = map[string]any{"type": "string", "description": sandboxIDDescription}
	obj["properties"] = props
	return json.Marshal(obj)
}

// runCustom runs a manifest's command with the call's arguments as JSON
// on its standard input. Its lifetime is the call's: the timeout, a
// cancellation or the session's end stops it, as run_shell's.
func runCustom(ctx context.Context, c *call, m *manifest.Manifest) (*mcpapi.CallToolResult, error) {
	args := maps.Clone(c.args)
	delete(args, sandboxIDArg)
	stdin, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("encode arguments: %w", err)
	}
	timeout := c.g.cfg.Limits.CallTimeout
	if m.Timeout > 0 && m.Timeout < timeout {
		timeout = m.Timeout
	}
	req := protocol.ExecRequest{Argv: m.Command, Stdin: stdin, TimeoutMs: timeout.Milliseconds()}
	o, err := c.execStream(ctx, protocol.OpExec, req, req.TimeoutMs)
	if err != nil {
		return nil, err
	}
	if m.Output == nil || o.failed() {
		return structured(o, execText(o), o.failed()), nil
	}
	v, err := c.structuredOutput(m, o)
	if err != nil {
		msg := fmt.Sprintf("%s: %v", m.Name, err)
		c.end.Outcome, c.end.Error = "error", audit.Clip(msg, 500)
		return mcpapi.NewToolResultError(msg + "\n" + execText(o)), nil
	}
	return structured(v, execText(o), false), nil
}

// structuredOutput decodes a command's stdout as the JSON object its
// manifest's output schema declares, and checks it against the schema.
func (c *call) structuredOutput(m *manifest.Manifest, o execOutput) (map[string]any, error) {
	if o.StdoutTruncated {
		return nil, errors.New("the command's output was cut at the 1 MiB cap, so it is not the JSON object the tool's output schema declares")
	}
	// jsonschema's decoder keeps numbers exact (json.Number).
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(o.Stdout)))
	if err != nil {
		return nil, fmt.Errorf("the command printed no JSON object on stdout, but the tool declares an output schema (%v)", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("the command printed JSON that is not an object, but the tool's output schema declares one")
	}
	if err := m.Output.Validate(obj); err != nil {
		return nil, fmt.Errorf("the command's output does not match the tool's output schema: %s", c.g.args.explain(err))
	}
	return obj, nil
}
