package gateway

import "github.com/mark3labs/mcp-go/mcp"

// A call's notes tell the caller something about where its call ran
// that is not the tool's answer: which default sandbox a sessionless
// call used (defaultbox.go), or that the sandbox's runner was replaced
// (died.go). A note never shares a content block with the payload, so a
// client that reads content[0], or structuredContent, gets exactly what
// the same call with an explicit sandbox_id gets, and an error result's
// content[0] is the error. Each note is a text block after the payload
// and, for clients that read data rather than prose, a member of the
// result's _meta under a namespaced key.

// Keys of a tool result's _meta that notes set.
const (
	// metaDefaultSandbox holds {"sandbox_id", and "created": true when
	// the call made it, "previous_sandbox_id" when it replaced one that
	// is gone}.
	metaDefaultSandbox = "sandgate.dev/default-sandbox"
	// metaSandboxReplaced holds {"sandbox_id", "reason",
	// "workspace_kept"}.
	metaSandboxReplaced = "sandgate.dev/sandbox-replaced"
)

// callNote is one note: its sentence and its _meta member.
type callNote struct {
	text string // in brackets, for the text block
	key  string // one of the meta constants
	meta map[string]any
}

// addNotes appends each note to res as a text block after everything
// the tool put there, and sets its _meta member.
func addNotes(res *mcp.CallToolResult, notes []callNote) {
	for _, n := range notes {
		res.Content = append(res.Content, mcp.NewTextContent(n.text))
		if res.Meta == nil {
			res.Meta = &mcp.Meta{}
		}
		res.Meta.SetMetaField(n.key, n.meta)
	}
}
