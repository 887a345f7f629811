package fleet

// Keys of a tool result's _meta that notes set.
const (
	// MetaDefaultSandbox holds {"sandbox_id", and "created": true when
	// the call made it, "previous_sandbox_id" when it replaced one that
	// is gone}.
	MetaDefaultSandbox = "sandgate.dev/default-sandbox"
	// MetaSandboxReplaced holds {"sandbox_id", "reason",
	// "workspace_kept"}.
	MetaSandboxReplaced = "sandgate.dev/sandbox-replaced"
	// MetaSandboxResumed holds {"sandbox_id", "paused_at"}.
	MetaSandboxResumed = "sandgate.dev/sandbox-resumed"
)

// Note is one thing a call's caller should be told about where the call
// ran, beside the tool's answer: its sentence and its member of the
// result's _meta. The MCP edge adds notes to results (gateway/tools/callnote.go).
type Note struct {
	Text string // in brackets, for the text block
	Key  string // one of the meta constants
	Meta map[string]any
}
