package tools

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/sandgate/sandgate/gateway/mcpapi"

	"github.com/sandgate/sandgate/runner/protocol"
)

type browserRouteArgs struct {
	Action       string            `json:"action,omitempty" jsonschema:"add (the default), list, remove (one route, by id) or clear (every route)."`
	URL          string            `json:"url,omitempty" jsonschema:"For add: which request URLs the route takes. A glob over the whole URL (* any characters, slashes too; ? one character; backslash escapes), e.g. *://api.example.com/*; with regex, an RE2 expression that matches anywhere in the URL."`
	Regex        bool              `json:"regex,omitempty" jsonschema:"url is a regular expression (RE2) instead of a glob."`
	Block        bool              `json:"block,omitempty" jsonschema:"Fail the matching requests (net::ERR_BLOCKED_BY_CLIENT) instead of answering them."`
	Status       int               `json:"status,omitempty" jsonschema:"HTTP status of the answer (default 200)."`
	Headers      map[string]string `json:"headers,omitempty" jsonschema:"Response headers. Content-Type is sniffed from the body and Access-Control-Allow-Origin: * is added unless given."`
	Body         string            `json:"body,omitempty" jsonschema:"Response body (at most 1 MiB)."`
	BodyEncoding string            `json:"body_encoding,omitempty" jsonschema:"text (the default) or base64."`
	ID           string            `json:"id,omitempty" jsonschema:"For remove: the route's id (r1, r2...), as list shows."`
	sandboxArg
}

type browserRecordStartArgs struct {
	Path string `json:"path,omitempty" jsonschema:"Where browser_record_stop saves the HAR file; relative paths resolve against /workspace (default recordings/browser-<time>.har)."`
	sandboxArg
}

// browserNetTools are the tools that intercept and record the browser's
// requests.
func browserNetTools() []toolDef {
	return []toolDef{
		browserToolE("browser_route", fmt.Sprintf("Mock or block the browser's requests: add a route that answers the requests whose URL matches a pattern with a given status, headers and body, without reaching the network (for mocking APIs), or fails them; list, remove or clear routes. Routes apply to every tab until removed, the newest matching route wins, and at most %d exist at once.", protocol.MaxRoutes), false, false, summarize("action", "url", "id"),
			routeRequest, routesText),
		browserToolE("browser_record_start", fmt.Sprintf("Start recording every request the browser's tabs make (URL, method, headers, status, sizes, timings; not response bodies), for debugging; browser_record_stop saves the recording as a HAR file in the workspace. At most %d requests and %d MiB.", protocol.MaxHAREntries, protocol.MaxHARBytes>>20), false, false, summarize("path"),
			func(a browserRecordStartArgs) (protocol.BrowserRequest, error) {
				return protocol.BrowserRequest{Action: protocol.BrowserRecord, RecordAction: protocol.RecordStart, Path: a.Path}, nil
			}, pageText),
		browserToolE("browser_record_stop", "Stop the recording browser_record_start began and save it as a HAR file (open it in a browser's developer tools or any HAR viewer).", false, true, summarize(),
			func(browserNoArgs) (protocol.BrowserRequest, error) {
				return protocol.BrowserRequest{Action: protocol.BrowserRecord, RecordAction: protocol.RecordStop}, nil
			}, pageText),
	}
}

// browserToolE is browserTool for a request built from arguments that can
// be wrong in ways the schema does not say.
func browserToolE[A any](name, desc string, readOnly, destructive bool, summary func(map[string]any) map[string]string,
	req func(A) (protocol.BrowserRequest, error), text func(protocol.BrowserResult) string) toolDef {
	opts := []mcpapi.ToolOption{argsSchema[A](), mcpapi.WithDescription(desc + browserNote),
		mcpapi.WithReadOnlyHintAnnotation(readOnly), mcpapi.WithDestructiveHintAnnotation(destructive)}
	return toolDef{category: catBrowser, needsBox: true, summary: summary, tool: mcpapi.NewTool(name, opts...),
		run: func(ctx context.Context, c *call) (*mcpapi.CallToolResult, error) {
			a, err := bind[A](c)
			if err != nil {
				return nil, err
			}
			r, err := req(a)
			if err != nil {
				return nil, err
			}
			return runBrowser(ctx, c, r, text)
		}}
}

func routeRequest(a browserRouteArgs) (protocol.BrowserRequest, error) {
	req := protocol.BrowserRequest{Action: protocol.BrowserRoute, RouteAction: strings.ToLower(a.Action), RouteID: a.ID}
	if req.RouteAction == "" {
		req.RouteAction = protocol.RouteAdd
	}
	if req.RouteAction != protocol.RouteAdd {
		return req, nil
	}
	body := []byte(a.Body)
	switch a.BodyEncoding {
	case "", protocol.EncodingText:
	case protocol.EncodingBase64:
		var err error
		if body, err = base64.StdEncoding.DecodeString(a.Body); err != nil {
			return req, fmt.Errorf("body is not base64: %w", err)
		}
	default:
		return req, fmt.Errorf("body_encoding %q is not known; use text or base64", a.BodyEncoding)
	}
	req.Route = &protocol.Route{Pattern: a.URL, Regex: a.Regex, Block: a.Block, Status: a.Status, Headers: a.Headers, Body: body}
	return req, nil
}

func routesText(r protocol.BrowserResult) string {
	var b strings.Builder
	b.WriteString(r.Message)
	for _, rt := range r.Routes {
		kind := "glob"
		if rt.Regex {
			kind = "regex"
		}
		what := fmt.Sprintf("fulfil %d", rt.Status)
		if rt.Block {
			what = "block"
		}
		fmt.Fprintf(&b, "\n%s: %s %s → %s (%d hit(s))", rt.ID, kind, rt.Pattern, what, rt.Hits)
	}
	return b.String()
}
