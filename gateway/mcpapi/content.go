package mcpapi

// Content is one block of a tool result or a prompt message: a
// TextContent, an ImageContent or an EmbeddedResource.
type Content interface{ isContent() }

// TextContent is a block of text.
type TextContent struct{ Text string }

// ImageContent is an image, its bytes base64-encoded as MCP carries them.
type ImageContent struct {
	Data     string // base64
	MIMEType string
}

// EmbeddedResource is a resource's contents carried inside a result.
type EmbeddedResource struct{ Resource ResourceContents }

func (TextContent) isContent()      {}
func (ImageContent) isContent()     {}
func (EmbeddedResource) isContent() {}

// NewTextContent returns a text block.
func NewTextContent(text string) TextContent { return TextContent{Text: text} }

// NewImageContent returns an image block; data is base64.
func NewImageContent(data, mimeType string) ImageContent {
	return ImageContent{Data: data, MIMEType: mimeType}
}

// NewEmbeddedResource returns a block carrying a resource's contents.
func NewEmbeddedResource(r ResourceContents) EmbeddedResource {
	return EmbeddedResource{Resource: r}
}

// ResourceContents is what reading a resource returns: a
// TextResourceContents or a BlobResourceContents.
type ResourceContents interface{ isResourceContents() }

// TextResourceContents is a resource whose contents are text.
type TextResourceContents struct {
	URI      string
	MIMEType string
	Text     string
}

// BlobResourceContents is a resource whose contents are bytes,
// base64-encoded as MCP carries them.
type BlobResourceContents struct {
	URI      string
	MIMEType string
	Blob     string // base64
}

func (TextResourceContents) isResourceContents() {}
func (BlobResourceContents) isResourceContents() {}
