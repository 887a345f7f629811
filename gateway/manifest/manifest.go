package manifest

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// CategoryCustom is the category of a tool that names none of the
// gateway's own.
const CategoryCustom = "custom"

// MaxBytes bounds one manifest file.
const MaxBytes = 1 << 20

// Manifest is one custom tool, checked and with its schemas compiled.
type Manifest struct {
	File        string // base name of the file it came from
	Name        string
	Description string
	// InputSchema and OutputSchema are the schemas as written (compacted);
	// OutputSchema is nil when none was declared.
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage
	Input        *jsonschema.Schema
	Output       *jsonschema.Schema // nil when OutputSchema is
	Command      []string           // argv, run without a shell
	Timeout      time.Duration      // 0: the gateway's call timeout
	Scope        string
	Category     string
	ReadOnly     *bool // annotations; nil when the manifest does not say
	Destructive  *bool
	// Sum identifies the file's content, so a reload can tell a changed
	// manifest from one merely touched.
	Sum [sha256.Size]byte
}

// Options are what a manifest is checked against: the gateway's policy.
type Options struct {
	// Categories are the gateway's tool categories; CategoryCustom is
	// always allowed.
	Categories []string
	// Scopes are the scopes a manifest may require (auth.AllScopes).
	Scopes []string
	// MaxTimeout is the gateway's call timeout, above which no timeout
	// may be set.
	MaxTimeout time.Duration
	// Reserved are names no manifest may take: the built-in tools'.
	Reserved []string
	// ReservedArguments are input properties the gateway adds to every
	// custom tool (sandbox_id) and so no manifest may declare.
	ReservedArguments []string
	// CheckInputSchema, when set, is the MCP edge's own check of a tool's
	// input schema (mcpedge.CheckInputSchema): a schema the edge would
	// refuse when the tool is served is refused here, with the file
	// named, instead.
	CheckInputSchema func(schema json.RawMessage) error
}

// FieldError is one problem with one field of one manifest file.
type FieldError struct {
	File    string
	Field   string // "" for a problem with the whole file
	Problem string
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.File + ": " + e.Problem
	}
	return e.File + ": " + e.Field + ": " + e.Problem
}

// wire is a manifest as written. Schemas stay raw until checked.
type wire struct {
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
	Command      []string        `json:"command"`
	Timeout      string          `json:"timeout"`
	Scope        string          `json:"scope"`
	Category     string          `json:"category"`
	Annotations  *struct {
		ReadOnly    *bool `json:"readOnly"`
		Destructive *bool `json:"destructive"`
	} `json:"annotations"`
}

// Parse checks one manifest file's content. On failure the error joins
// one *FieldError per problem found, so an operator fixes them all in
// one go.
func Parse(file string, data []byte, opts Options) (*Manifest, error) {
	if len(data) > MaxBytes {
		return nil, &FieldError{File: file, Problem: fmt.Sprintf("%d bytes is above the %d byte limit of a manifest", len(data), MaxBytes)}
	}
	var w wire
	dec := json.NewDecoder(bytes.NewReader(data))
	// A misspelt field would otherwise be silently ignored, and the tool
	// would run without what the operator meant it to have.
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return nil, &FieldError{File: file, Problem: "not a JSON manifest: " + err.Error()}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &FieldError{File: file, Problem: "more than one JSON value; a manifest is one object"}
	}
	m := &Manifest{File: file, Name: w.Name, Description: w.Description, Command: w.Command,
		Scope: w.Scope, Category: w.Category, Sum: sha256.Sum256(data)}
	if w.Annotations != nil {
		m.ReadOnly, m.Destructive = w.Annotations.ReadOnly, w.Annotations.Destructive
	}
	if m.Category == "" {
		m.Category = CategoryCustom
	}
	ck := &checker{file: file, opts: opts}
	ck.name(m.Name)
	ck.description(m.Description)
	ck.command(m.Command)
	ck.scope(m.Scope)
	ck.category(m.Category)
	m.Timeout = ck.timeout(w.Timeout)
	m.InputSchema, m.Input = ck.schema("inputSchema", w.InputSchema, true)
	if len(w.OutputSchema) > 0 {
		m.OutputSchema, m.Output = ck.schema("outputSchema", w.OutputSchema, false)
	}
	if len(ck.problems) > 0 {
		return nil, errors.Join(ck.problems...)
	}
	return m, nil
}
