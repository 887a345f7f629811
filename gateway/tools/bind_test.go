package tools

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/gateway/mcpapi"
)

type (
	embedAtEnd struct {
		A string `json:"a"`
		sandboxArg
	}
	embedNested struct {
		embedAtEnd
		B int `json:"b,omitempty"`
	}
	embedWithOptions struct {
		cwdArg `json:",omitempty"`
		C      string `json:"c"`
	}
	fieldTags struct {
		Plain  string
		hidden string
		Skip   string `json:"-"`
		Dash   string `json:"-,"`
	}

	embedNamed struct {
		cwdArg `json:"where"`
	}
	embedDash struct {
		cwdArg `json:"-"`
	}
	embedPointer struct {
		*cwdArg
	}
	argName    string
	embedValue struct {
		argName
	}
	embedClash struct {
		Path string `json:"path"`
		searchPathArg
	}
)

func TestBindArgsFlattensEmbeddedStructs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		typ  any
		want fieldIndex
	}{
		{embedAtEnd{}, fieldIndex{"a": {0}, "sandbox_id": {1, 0}}},
		{embedNested{}, fieldIndex{"a": {0, 0}, "sandbox_id": {0, 1, 0}, "b": {1}}},
		{embedWithOptions{}, fieldIndex{"cwd": {0, 0}, "c": {1}}},
		{fieldTags{}, fieldIndex{"Plain": {0}, "-": {3}}},
	}
	for _, tt := range tests {
		typ := reflect.TypeOf(tt.typ)
		t.Run(typ.Name(), func(t *testing.T) {
			t.Parallel()
			got, err := argFields(typ)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("argFields = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestBindArgsAgreesWithEncodingJSON binds arguments into structs with
// embedded fragments and checks the result is what json.Unmarshal makes
// of the same arguments as text.
func TestBindArgsAgreesWithEncodingJSON(t *testing.T) {
	t.Parallel()
	args := []map[string]any{
		{"a": "x", "sandbox_id": "sb-1", "b": 3.0},
		{"A": "upper", "SANDBOX_ID": "sb-2"},
		{"sandbox_id": "exact", "Sandbox_Id": "folded"}, // the exact name wins
		{"cwd": "/tmp", "c": "y", "unknown": true},
	}
	for _, a := range args {
		raw, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		for _, typ := range []reflect.Type{reflect.TypeFor[embedNested](), reflect.TypeFor[embedWithOptions](), reflect.TypeFor[runCodeArgs]()} {
			got, want := reflect.New(typ), reflect.New(typ)
			if err := bindArgs(a, got.Interface()); err != nil {
				t.Fatalf("bindArgs(%v) into %v: %v", a, typ, err)
			}
			if err := json.Unmarshal(raw, want.Interface()); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Elem().Interface(), want.Elem().Interface()) {
				t.Errorf("bindArgs(%s) into %v = %+v, json.Unmarshal makes %+v", raw, typ, got.Elem(), want.Elem())
			}
		}
	}
}

func TestBindArgsRefusesEmbeddings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		typ  any
		want string
	}{
		{embedNamed{}, `argument struct tools.embedNamed: embedded field cwdArg has the JSON name "where", which the schema generator does not honour`},
		{embedDash{}, `argument struct tools.embedDash: embedded field cwdArg is tagged json:"-", which the schema generator does not honour`},
		{embedPointer{}, "argument struct tools.embedPointer: embedded field cwdArg is a pointer: embed the struct itself"},
		{embedValue{}, "argument struct tools.embedValue: embedded field argName is not a struct: give it a field name"},
		{embedClash{}, `argument struct tools.embedClash: two fields have the JSON name "path"`},
		{argName(""), "argument struct tools.argName: not a struct"},
	}
	for _, tt := range tests {
		typ := reflect.TypeOf(tt.typ)
		t.Run(typ.Name(), func(t *testing.T) {
			t.Parallel()
			_, err := argFields(typ)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("argFields = %v, want an error starting %q", err, tt.want)
			}
			if typ.Kind() != reflect.Struct {
				return
			}
			if err := bindArgs(map[string]any{}, reflect.New(typ).Interface()); err == nil {
				t.Error("bindArgs bound into a refused struct")
			}
		})
	}
}

type (
	flatTarget struct {
		Ref       string `json:"ref,omitempty" jsonschema:"Element ref from the latest browser_snapshot, e.g. e12."`
		Selector  string `json:"selector,omitempty" jsonschema:"CSS selector (or XPath starting with / or xpath=) instead of ref."`
		Text      string `json:"text" jsonschema:"Text."`
		SandboxID string `json:"sandbox_id,omitempty" jsonschema:"Sandbox to use, as returned by sandbox_create. Omit it to use your MCP session's sandbox or, without a session, this client's default sandbox (created on first use)."`
	}
	embeddedTarget struct {
		elementArg
		Text string `json:"text" jsonschema:"Text."`
		sandboxArg
	}
)

// TestSchemaFlattensEmbeddedStructs pins what args.go relies on in the
// schema generator: an embedded struct's fields come where it is
// embedded, with their descriptions, exactly as if declared there.
func TestSchemaFlattensEmbeddedStructs(t *testing.T) {
	t.Parallel()
	flat := schemaOf[flatTarget](t)
	embedded := schemaOf[embeddedTarget](t)
	if len(flat) == 0 || string(flat) != string(embedded) {
		t.Errorf("schema of the embedding struct\n%s\ndiffers from the flat one\n%s", embedded, flat)
	}
}

// TestSchemaGeneratorFlattensNamedEmbeds pins why argFields refuses an
// embedded struct with a JSON name: encoding/json reads it as one member
// ("where"), the schema generator flattens it all the same. If an upgrade
// makes the generator honour the name, this fails, and the binder can
// follow encoding/json instead of refusing.
func TestSchemaGeneratorFlattensNamedEmbeds(t *testing.T) {
	t.Parallel()
	raw := schemaOf[embedNamed](t)
	var s struct{ Properties map[string]any }
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	if _, flattened := s.Properties["cwd"]; !flattened || s.Properties["where"] != nil {
		t.Errorf("schema of embedNamed = %s; the generator now honours an embedded struct's JSON name", raw)
	}
	var v embedNamed
	if err := json.Unmarshal([]byte(`{"where":{"cwd":"/tmp"}}`), &v); err != nil || v.Cwd != "/tmp" {
		t.Errorf("encoding/json no longer nests a named embedded struct: %+v, %v", v, err)
	}
}

// TestSchemaSandboxIDDescription checks that custom tools, whose schema
// is written by hand, describe sandbox_id as the generated schemas do.
func TestSchemaSandboxIDDescription(t *testing.T) {
	t.Parallel()
	raw := schemaOf[sandboxArg](t)
	var s struct {
		Properties map[string]struct{ Description string }
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	custom, err := withSandboxID(json.RawMessage(`{"type":"object"}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := s.Properties["sandbox_id"].Description; want == "" || !strings.Contains(string(custom), want) {
		t.Errorf("custom tool schema %s lacks the generated description %q", custom, want)
	}
}

// TestSchemaRefusesAtStartUp checks that a tool built from a refused
// argument struct stops the gateway when the tools are built.
func TestSchemaRefusesAtStartUp(t *testing.T) {
	t.Parallel()
	defer func() {
		got, _ := recover().(string)
		want := `gateway: argument struct tools.embedNamed: embedded field cwdArg has the JSON name "where"`
		if !strings.HasPrefix(got, want) {
			t.Errorf("argsSchema[embedNamed] panicked with %q, want %q...", got, want)
		}
	}()
	mcpapi.NewTool("t", argsSchema[embedNamed]())
}

// schemaOf is T's generated input schema.
func schemaOf[T any](t *testing.T) json.RawMessage {
	t.Helper()
	raw, err := generateSchema[T]()
	if err != nil {
		t.Fatalf("schema of %T: %v", *new(T), err)
	}
	return raw
}
