package tools

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/sandgate/sandgate/gateway/mcpapi"

	"github.com/sandgate/sandgate/runner/protocol"
)

type httpRequestArgs struct {
	URL             string            `json:"url" jsonschema:"Absolute http:// or https:// URL. The host must be on the sandbox's network allowlist (see sandbox_network)."`
	Method          string            `json:"method,omitempty" jsonschema:"HTTP method (default GET)."`
	Headers         map[string]string `json:"headers,omitempty" jsonschema:"Request headers."`
	Body            string            `json:"body,omitempty" jsonschema:"Request body (text, or base64 with body_encoding)."`
	BodyEncoding    string            `json:"body_encoding,omitempty" jsonschema:"text (default) or base64."`
	MaxBodyBytes    int64             `json:"max_body_bytes,omitempty" jsonschema:"Keep at most this much of the response body (default 1 MiB, at most 8 MiB)."`
	Timeout         float64           `json:"timeout,omitempty" jsonschema:"Seconds before the request is abandoned (default and maximum: the call timeout)."`
	CAFile          string            `json:"ca_file,omitempty" jsonschema:"PEM file in the sandbox with extra certificate authorities to trust (a private CA)."`
	FollowRedirects bool              `json:"follow_redirects,omitempty" jsonschema:"Follow up to 10 redirects (default: return the redirect)."`
	sandboxArg
}

// httpResponse is http_request's structuredContent: everything but the
// body, which is the text content (base64 when it is not UTF-8).
type httpResponse struct {
	Status       int                 `json:"status"`
	StatusText   string              `json:"status_text"`
	Headers      map[string][]string `json:"headers"`
	BodyEncoding string              `json:"body_encoding"` // of the text content: text or base64
	BodyBytes    int64               `json:"body_bytes"`
	Truncated    bool                `json:"truncated"`
	FinalURL     string              `json:"final_url"`
	DurationMs   int64               `json:"duration_ms"`
}

func networkTools() []toolDef {
	return []toolDef{
		{category: catNetwork, needsBox: true, summary: summarize("method", "url"), run: runHTTPRequest,
			tool: mcpapi.NewTool("http_request", argsSchema[httpRequestArgs](), mcpapi.WithReadOnlyHintAnnotation(false), mcpapi.WithDestructiveHintAnnotation(false),
				mcpapi.WithDescription("Make an HTTP request from inside the sandbox, through its egress proxy: only hosts on the sandbox's network allowlist are reachable. The text content is the response body (base64 when binary); structuredContent has the status, headers and sizes."))},
	}
}

func runHTTPRequest(ctx context.Context, c *call) (*mcpapi.CallToolResult, error) {
	a, err := bind[httpRequestArgs](c)
	if err != nil {
		return nil, err
	}
	timeout, err := c.timeoutMs(a.Timeout)
	if err != nil {
		return nil, err
	}
	req := protocol.HTTPRequest{Method: a.Method, URL: a.URL, Headers: a.Headers, MaxBodyBytes: a.MaxBodyBytes,
		CAFile: a.CAFile, FollowRedirects: a.FollowRedirects, TimeoutMs: timeout}
	switch strings.ToLower(a.BodyEncoding) {
	case "", "text":
		req.Body = []byte(a.Body)
	case "base64":
		if req.Body, err = base64.StdEncoding.DecodeString(a.Body); err != nil {
			return nil, fmt.Errorf("body is not valid base64: %v", err)
		}
	default:
		return nil, fmt.Errorf("body_encoding %q: want text or base64", a.BodyEncoding)
	}
	var res protocol.HTTPResult
	if err := c.runner.Call(ctx, protocol.OpHTTPRequest, req, &res); err != nil {
		return nil, err
	}
	out := httpResponse{Status: res.Status, StatusText: res.StatusText, Headers: res.Headers, BodyEncoding: "text",
		BodyBytes: res.BodyBytes, Truncated: res.Truncated, FinalURL: res.FinalURL, DurationMs: res.DurationMs}
	body := string(res.Body)
	if !utf8.Valid(res.Body) {
		out.BodyEncoding, body = "base64", base64.StdEncoding.EncodeToString(res.Body)
	}
	return structured(out, body, false), nil
}
