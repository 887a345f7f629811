package docs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// tool is one entry of a tools/list answer, as the golden file holds it.
type tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema schema          `json:"inputSchema"`
	Annotations json.RawMessage `json:"annotations"`
}

// schema is the part of JSON Schema the tool list uses. Properties keep
// the order the golden file lists them in, which is the order a tool's
// arguments struct declares them: a reader sees the important ones first.
type schema struct {
	Type                 string          `json:"type"`
	Description          string          `json:"description"`
	Enum                 []any           `json:"enum"`
	Default              any             `json:"default"`
	Items                *schema         `json:"items"`
	Required             []string        `json:"required"`
	AdditionalProperties json.RawMessage `json:"additionalProperties"`
	Properties           []property      `json:"-"`
}

type property struct {
	Name   string
	Schema schema
}

// UnmarshalJSON decodes a schema, keeping the order of its properties.
func (s *schema) UnmarshalJSON(b []byte) error {
	type plain schema
	if err := json.Unmarshal(b, (*plain)(s)); err != nil {
		return err
	}
	var raw struct {
		Properties json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(b, &raw); err != nil || len(raw.Properties) == 0 {
		return err
	}
	props, err := orderedProperties(raw.Properties)
	s.Properties = props
	return err
}

// orderedProperties decodes a JSON object of schemas in document order.
func orderedProperties(b []byte) ([]property, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("properties: want an object, got %v (%v)", t, err)
	}
	var out []property
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("properties: %w", err)
		}
		p := property{Name: t.(string)}
		if err := dec.Decode(&p.Schema); err != nil {
			return nil, fmt.Errorf("property %s: %w", p.Name, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// RenderTools renders the tool reference page from a tools/list answer
// (a JSON array of tools, as gateway/testdata/tools_list.golden.json).
func RenderTools(toolsList []byte) ([]byte, error) {
	var tools []tool
	if err := json.Unmarshal(toolsList, &tools); err != nil {
		return nil, fmt.Errorf("decode tool list: %w", err)
	}
	var b bytes.Buffer
	b.WriteString(toolsHeader)
	writeIndex(&b, tools)
	for _, t := range tools {
		if err := writeTool(&b, t); err != nil {
			return nil, fmt.Errorf("tool %s: %w", t.Name, err)
		}
	}
	return b.Bytes(), nil
}

const toolsHeader = `<!-- Generated from gateway/testdata/tools_list.golden.json by docs/toolsref.go. Do not edit: run make docs. -->

# Tool reference

Every built-in tool the gateway lists in ` + "`tools/list`" + `, with its arguments and
annotations exactly as a client receives them. How the tools behave (results,
streaming, the stateful interpreter, notebooks, the browser, code search) is in
[tools-guide.md](tools-guide.md); tools an operator adds are in
[custom-tools.md](custom-tools.md).

Every sandbox tool takes an optional ` + "`sandbox_id`" + `: without it a call uses the
MCP session's sandbox or, for a sessionless client, that client's default
sandbox ([mcp.md](mcp.md#the-default-sandbox-of-a-sessionless-client)).
` + "`openWorldHint`" + ` is shown as listed by a gateway without egress; once an
operator's policy allows any destination, the tools that run code or load
pages (` + "`run_shell`, `run_code`, `process_*`" + `, the browser tools) say ` + "`true`" + `
too ([egress.md](egress.md)). Operators can serve a subset with ` + "`--tools`" + `,
` + "`--enable-tools`" + ` and ` + "`--disable-tools`" + ` ([configuration.md](configuration.md)).

`

// writeIndex lists the tools by the scope a call needs.
func writeIndex(b *bytes.Buffer, tools []tool) {
	byScope := map[string][]string{}
	var scopes []string
	for _, t := range tools {
		s := scopeOf(t.Description)
		if _, ok := byScope[s]; !ok {
			scopes = append(scopes, s)
		}
		byScope[s] = append(byScope[s], fmt.Sprintf("[`%s`](#%s)", t.Name, t.Name))
	}
	slices.Sort(scopes)
	b.WriteString("| scope | tools |\n|---|---|\n")
	for _, s := range scopes {
		fmt.Fprintf(b, "| `%s` | %s |\n", s, strings.Join(byScope[s], ", "))
	}
	b.WriteString("\n")
}

// scopeOf reads the scope from the sentence the gateway appends to
// every description ("Requires scope: sandbox:exec.").
func scopeOf(desc string) string {
	const marker = "Requires scope: "
	i := strings.LastIndex(desc, marker)
	if i < 0 {
		return "none"
	}
	return strings.TrimSuffix(desc[i+len(marker):], ".")
}

func writeTool(b *bytes.Buffer, t tool) error {
	fmt.Fprintf(b, "## %s\n\n%s\n\n", t.Name, text(t.Description))
	if s := t.InputSchema; len(s.Properties) > 0 {
		b.WriteString("| argument | type | required | description |\n|---|---|---|---|\n")
		writeProps(b, "", s)
		b.WriteString("\n")
	} else {
		b.WriteString("No arguments.\n\n")
	}
	hints, err := annotations(t.Annotations)
	if err != nil {
		return err
	}
	if hints != "" {
		fmt.Fprintf(b, "Annotations: %s.\n\n", hints)
	}
	return nil
}

// writeProps writes one row per property, then the rows of its nested
// properties under a dotted name (network.allow, fields[].ref).
func writeProps(b *bytes.Buffer, prefix string, s schema) {
	for _, p := range s.Properties {
		name := prefix + p.Name
		req := ""
		if slices.Contains(s.Required, p.Name) {
			req = "yes"
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", name, typeOf(p.Schema), req, describe(p.Schema))
		switch {
		case len(p.Schema.Properties) > 0:
			writeProps(b, name+".", p.Schema)
		case p.Schema.Items != nil && len(p.Schema.Items.Properties) > 0:
			writeProps(b, name+"[].", *p.Schema.Items)
		}
	}
}

// typeOf names a schema's type the way a reader thinks of it: "array of
// string", "object of string" for a map.
func typeOf(s schema) string {
	switch {
	case s.Type == "array" && s.Items != nil:
		return "array of " + typeOf(*s.Items)
	case s.Type == "object" && len(s.Properties) == 0 && len(s.AdditionalProperties) > 0:
		var v schema
		if json.Unmarshal(s.AdditionalProperties, &v) == nil && v.Type != "" {
			return "object of " + v.Type
		}
	}
	if s.Type == "" {
		return "any"
	}
	return s.Type
}

// describe is a property's description cell, with its enum and default.
func describe(s schema) string {
	d := cell(s.Description)
	if len(s.Enum) > 0 {
		var vs []string
		for _, v := range s.Enum {
			vs = append(vs, fmt.Sprintf("`%v`", v))
		}
		d += " One of " + strings.Join(vs, ", ") + "."
	}
	if s.Default != nil {
		d += fmt.Sprintf(" Default `%v`.", s.Default)
	}
	return strings.TrimSpace(d)
}

// markdownEscaper keeps a description's characters from being read as
// Markdown or HTML: "*.go" is not emphasis, "<select>" is not a tag.
var markdownEscaper = strings.NewReplacer(`\`, `\\`, "*", `\*`, "<", "&lt;", "`", "\\`")

// text makes a description safe as a Markdown paragraph.
func text(s string) string { return markdownEscaper.Replace(s) }

// cell makes a description safe for one Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(text(s), "|", `\|`)
	return strings.Join(strings.Fields(s), " ")
}

// annotations lists a tool's hints in a fixed order.
func annotations(raw json.RawMessage) (string, error) {
	if len(raw) == 0 {
		return "", nil
	}
	var a map[string]any
	if err := json.Unmarshal(raw, &a); err != nil {
		return "", fmt.Errorf("annotations: %w", err)
	}
	var parts []string
	for _, k := range []string{"title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"} {
		if v, ok := a[k]; ok {
			parts = append(parts, fmt.Sprintf("`%s: %v`", k, v))
			delete(a, k)
		}
	}
	rest := make([]string, 0, len(a))
	for k := range a {
		rest = append(rest, k)
	}
	slices.Sort(rest)
	for _, k := range rest {
		parts = append(parts, fmt.Sprintf("`%s: %v`", k, a[k]))
	}
	return strings.Join(parts, ", "), nil
}
