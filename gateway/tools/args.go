package tools

import "reflect"

// Arguments that several tools take alike, declared once and embedded in
// each tool's argument struct. An embedded struct's fields are promoted
// as encoding/json promotes them: into the tool's input schema and into
// the binding of its arguments, as if declared where the embedding
// stands, which therefore decides where they come in the schema
// (bind.go says which embeddings are allowed). A fragment is shared only
// where the description is the same word for word; one that reads
// differently for a tool stays that tool's own field.

// sandboxArg picks the sandbox a tool works in.
type sandboxArg struct {
	SandboxID string `json:"sandbox_id,omitempty" jsonschema:"Sandbox to use, as returned by sandbox_create. Omit it to use your MCP session's sandbox or, without a session, this client's default sandbox (created on first use)."`
}

// sandboxIDDescription is sandbox_id's description, for the schemas not
// generated from sandboxArg (custom tools').
var sandboxIDDescription = reflect.TypeFor[sandboxArg]().Field(0).Tag.Get("jsonschema")

// cwdArg is the working directory of a command or program.
type cwdArg struct {
	Cwd string `json:"cwd,omitempty" jsonschema:"Working directory (default /workspace)."`
}

// envArg is the environment a command or program gets on top of the
// sandbox's.
type envArg struct {
	Env map[string]string `json:"env,omitempty" jsonschema:"Extra environment variables."`
}

// processIDArg names a background process.
type processIDArg struct {
	ProcessID string `json:"process_id" jsonschema:"Background process id."`
}

// searchPathArg is where a search looks.
type searchPathArg struct {
	Path string `json:"path,omitempty" jsonschema:"Directory or file to search (default /workspace)."`
}

// elementArg picks the page element a browser action works on.
type elementArg struct {
	Ref      string `json:"ref,omitempty" jsonschema:"Element ref from the latest browser_snapshot, e.g. e12."`
	Selector string `json:"selector,omitempty" jsonschema:"CSS selector (or XPath starting with / or xpath=) instead of ref."`
}
