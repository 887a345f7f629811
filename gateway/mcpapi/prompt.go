package mcpapi

import "context"

// Prompt is one entry of prompts/list.
type Prompt struct {
	Name        string
	Title       string
	Description string
	Arguments   []PromptArgument
}

// PromptArgument is one argument a prompt takes.
type PromptArgument struct {
	Name        string
	Description string
	Required    bool
}

// Role is who a prompt message is from.
type Role string

const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// PromptMessage is one message of a prompt.
type PromptMessage struct {
	Role    Role
	Content Content
}

// GetPromptResult is the answer of prompts/get.
type GetPromptResult struct {
	Description string
	Messages    []PromptMessage
}

// PromptHandler returns the prompt's messages for args.
type PromptHandler func(ctx context.Context, args map[string]string) (*GetPromptResult, error)

// NewPromptMessage returns a message from role.
func NewPromptMessage(role Role, content Content) PromptMessage {
	return PromptMessage{Role: role, Content: content}
}

// NewGetPromptResult returns a prompt's messages with its description.
func NewGetPromptResult(description string, messages []PromptMessage) *GetPromptResult {
	return &GetPromptResult{Description: description, Messages: messages}
}
