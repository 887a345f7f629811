package tools

import (
	"github.com/sandgate/sandgate/gateway/fleet"
	"github.com/sandgate/sandgate/gateway/mcpapi"
)

// A call's notes tell the caller something about where its call ran
// that is not the tool's answer: which default sandbox a sessionless
// call used (gateway/fleet/defaultbox.go), or that the sandbox's runner was replaced
// (gateway/fleet/died.go). A note never shares a content block with the payload, so a
// client that reads content[0], or structuredContent, gets exactly what
// the same call with an explicit sandbox_id gets, and an error result's
// content[0] is the error. Each note is a text block after the payload
// and, for clients that read data rather than prose, a member of the
// result's _meta under a namespaced key.

// addNotes appends each note to res as a text block after everything
// the tool put there, and sets its _meta member.
func addNotes(res *mcpapi.CallToolResult, notes []fleet.Note) {
	for _, n := range notes {
		res.Content = append(res.Content, mcpapi.NewTextContent(n.Text))
		if res.Meta == nil {
			res.Meta = map[string]any{}
		}
		res.Meta[n.Key] = n.Meta
	}
}
