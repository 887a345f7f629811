package manifest_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/gateway/manifest"
	"github.com/sandgate/sandgate/gateway/mcpedge"
)

var testOptions = manifest.Options{
	Categories:        []string{"files", "exec"},
	Scopes:            []string{"sandbox:exec", "sandbox:files:read"},
	MaxTimeout:        time.Minute,
	Reserved:          []string{"run_shell"},
	ReservedArguments: []string{"sandbox_id"},
	CheckInputSchema:  mcpedge.CheckInputSchema,
}

// valid returns a good manifest with change applied to its fields.
func valid(change func(m map[string]any)) []byte {
	m := map[string]any{
		"name":         "word_count",
		"description":  "Count the words of a text.",
		"inputSchema":  map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}, "required": []any{"text"}},
		"outputSchema": map[string]any{"type": "object", "properties": map[string]any{"words": map[string]any{"type": "integer"}}},
		"command":      []any{"python3", "-c", "import json,sys; print(json.dumps({'words': len(json.load(sys.stdin)['text'].split())}))"},
		"timeout":      "10s",
		"scope":        "sandbox:exec",
		"category":     "exec",
		"annotations":  map[string]any{"readOnly": true},
	}
	if change != nil {
		change(m)
	}
	b, _ := json.Marshal(m)
	return b
}

func TestParseValid(t *testing.T) {
	t.Parallel()
	m, err := manifest.Parse("wc.json", valid(nil), testOptions)
	if err != nil {
		t.Fatal(err)
	}
	if m.Name != "word_count" || m.Timeout != 10*time.Second || m.Category != "exec" || m.Scope != "sandbox:exec" ||
		m.ReadOnly == nil || !*m.ReadOnly || m.Destructive != nil || m.Output == nil || len(m.Command) != 3 {
		t.Errorf("parsed %+v", m)
	}
	if err := m.Input.Validate(map[string]any{"text": "a b"}); err != nil {
		t.Errorf("input schema refuses good arguments: %v", err)
	}
	if err := m.Input.Validate(map[string]any{}); err == nil {
		t.Error("input schema accepts arguments without the required text")
	}

	// The least a manifest needs: category defaults to custom, no
	// timeout means the gateway's, no output schema.
	m, err = manifest.Parse("min.json", []byte(`{"name":"x","description":"d","inputSchema":{"type":"object"},"command":["true"],"scope":"sandbox:exec"}`), testOptions)
	if err != nil {
		t.Fatal(err)
	}
	if m.Category != manifest.CategoryCustom || m.Timeout != 0 || m.Output != nil || m.OutputSchema != nil {
		t.Errorf("defaults: %+v", m)
	}
}

func TestParseInvalid(t *testing.T) {
	t.Parallel()
	set := func(k string, v any) func(map[string]any) { return func(m map[string]any) { m[k] = v } }
	drop := func(k string) func(map[string]any) { return func(m map[string]any) { delete(m, k) } }
	tests := []struct {
		name   string
		data   []byte
		field  string // "" for whole-file problems
		reason string // part of the message
	}{
		{"not json", []byte(`{"name":`), "", "not a JSON manifest"},
		{"two values", append(valid(nil), []byte(` {}`)...), "", "more than one JSON value"},
		{"unknown field", valid(set("timeout_seconds", 3)), "", "unknown field"},
		{"too big", make([]byte, manifest.MaxBytes+1), "", "byte limit"},
		{"no name", valid(drop("name")), "name", "missing"},
		{"bad name", valid(set("name", "word count")), "name", "letters, digits"},
		{"long name", valid(set("name", strings.Repeat("a", 65))), "name", "1 to 64"},
		{"built-in name", valid(set("name", "run_shell")), "name", "built-in"},
		{"no description", valid(set("description", "  ")), "description", "missing"},
		{"long description", valid(set("description", strings.Repeat("d", 5000))), "description", "limit"},
		{"no command", valid(drop("command")), "command", "missing"},
		{"empty argv0", valid(set("command", []any{""})), "command", "missing"},
		{"nul in argv", valid(set("command", []any{"sh", "a\x00b"})), "command", "NUL"},
		{"command not a list", valid(set("command", "sh -c cat")), "", "not a JSON manifest"},
		{"bad scope", valid(set("scope", "root")), "scope", "want one of"},
		{"no scope", valid(drop("scope")), "scope", "want one of"},
		{"bad category", valid(set("category", "games")), "category", "want custom"},
		{"bad timeout", valid(set("timeout", "10")), "timeout", "duration"},
		{"negative timeout", valid(set("timeout", "-1s")), "timeout", "positive"},
		{"timeout above call timeout", valid(set("timeout", "2m")), "timeout", "call timeout"},
		{"no input schema", valid(drop("inputSchema")), "inputSchema", "missing"},
		{"input schema not object", valid(set("inputSchema", []any{1})), "inputSchema", "not a JSON object"},
		{"input schema not type object", valid(set("inputSchema", map[string]any{"type": "string"})), "inputSchema", "\"type\" must be \"object\""},
		{"input schema invalid", valid(set("inputSchema", map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integr"}}})), "inputSchema", "invalid JSON Schema"},
		{"input schema bad regexp", valid(set("inputSchema", map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"pattern": "("}}})), "inputSchema", "invalid JSON Schema"},
		{"input schema file ref", valid(set("inputSchema", map[string]any{"type": "object", "$ref": "file:///etc/passwd"})), "inputSchema", "not allowed"},
		{"input schema remote ref", valid(set("inputSchema", map[string]any{"type": "object", "$ref": "https://example.com/s.json"})), "inputSchema", "not allowed"},
		{"reserved argument", valid(set("inputSchema", map[string]any{"type": "object", "properties": map[string]any{"sandbox_id": map[string]any{}}})), "inputSchema", "reserved"},
		{"bad header annotation", valid(set("inputSchema", map[string]any{"type": "object", "properties": map[string]any{"o": map[string]any{"type": "object", "x-mcp-header": "X"}}})), "inputSchema", "x-mcp-header"},
		{"output schema not type object", valid(set("outputSchema", map[string]any{"type": "array"})), "outputSchema", "\"type\" must be \"object\""},
		{"output schema invalid", valid(set("outputSchema", map[string]any{"type": "object", "minProperties": -1})), "outputSchema", "invalid JSON Schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := manifest.Parse("tool.json", tt.data, testOptions)
			if err == nil {
				t.Fatalf("accepted: %+v", m)
			}
			var fe *manifest.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is no FieldError", err)
			}
			if fe.File != "tool.json" || fe.Field != tt.field || !strings.Contains(err.Error(), tt.reason) {
				t.Errorf("error %q (field %q); want field %q and %q", err, fe.Field, tt.field, tt.reason)
			}
			if !strings.HasPrefix(err.Error(), "tool.json: ") {
				t.Errorf("error %q does not start with the file name", err)
			}
		})
	}
}

// Every problem is reported at once, each naming its field.
func TestParseReportsEveryProblem(t *testing.T) {
	t.Parallel()
	_, err := manifest.Parse("t.json", []byte(`{"name":"","description":"","inputSchema":{},"command":[],"scope":"x","timeout":"soon"}`), testOptions)
	for _, field := range []string{"name", "description", "inputSchema", "command", "scope", "timeout"} {
		if !strings.Contains(err.Error(), "t.json: "+field+": ") {
			t.Errorf("error does not name %s:\n%v", field, err)
		}
	}
}
