package tools

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sandgate/sandgate/gateway/mcpapi"

	"github.com/sandgate/sandgate/runner/protocol"
)

// browserTimeout is the default time one browser action may take; a
// lower call timeout lowers it.
const browserTimeout = 30 * time.Second

var errNoBrowser = errors.New(`this sandbox's image has no browser; create one with sandbox_create {image: "sandgate/browser:latest"}`)

type browserNoArgs struct {
	sandboxArg
}

type browserNavigateArgs struct {
	URL string `json:"url" jsonschema:"Absolute URL: http://127.0.0.1:PORT/... for a server running inside the sandbox, file:///workspace/..., or data:. The sandbox has no network."`
	sandboxArg
}

type browserTargetArgs struct {
	elementArg
	sandboxArg
}

type browserTypeArgs struct {
	elementArg
	Text   string `json:"text" jsonschema:"Text that replaces the field's content."`
	Submit bool   `json:"submit,omitempty" jsonschema:"Press Enter afterwards (submits most forms)."`
	sandboxArg
}

type browserField struct {
	Ref      string `json:"ref,omitempty" jsonschema:"Element ref from the latest browser_snapshot."`
	Selector string `json:"selector,omitempty" jsonschema:"CSS selector instead of ref."`
	Value    string `json:"value" jsonschema:"Text for text fields, an option's value or label for selects, true or false for checkboxes and radio buttons."`
}

type browserFillFormArgs struct {
	Fields []browserField `json:"fields" jsonschema:"The fields to fill, in order."`
	sandboxArg
}

type browserSelectOptionArgs struct {
	Ref      string   `json:"ref,omitempty" jsonschema:"Ref of a <select> from the latest browser_snapshot."`
	Selector string   `json:"selector,omitempty" jsonschema:"CSS selector instead of ref."`
	Values   []string `json:"values" jsonschema:"Values or labels of the options to select (several for a multiple select)."`
	sandboxArg
}

type browserPressKeyArgs struct {
	Key string `json:"key" jsonschema:"Key name (Enter, Tab, Escape, Backspace, ArrowDown, PageDown, F5...) or one character, with modifiers like Control+a or Shift+Tab."`
	sandboxArg
}

type browserWaitForArgs struct {
	Text     string  `json:"text,omitempty" jsonschema:"Wait until this text is on the page."`
	Selector string  `json:"selector,omitempty" jsonschema:"Wait until an element matches this CSS selector."`
	Time     float64 `json:"time,omitempty" jsonschema:"Wait this many seconds (first, if text or selector are given too)."`
	sandboxArg
}

type browserScreenshotArgs struct {
	FullPage bool   `json:"full_page,omitempty" jsonschema:"Capture the whole scrollable page instead of the viewport."`
	Ref      string `json:"ref,omitempty" jsonschema:"Capture only this element (ref from browser_snapshot)."`
	Selector string `json:"selector,omitempty" jsonschema:"Capture only the element matching this CSS selector."`
	sandboxArg
}

type browserEvaluateArgs struct {
	Expression string `json:"expression" jsonschema:"JavaScript run in the page: an expression (document.title), a function (() => ...), or a function body with return; promises are awaited."`
	sandboxArg
}

type browserTabsArgs struct {
	Action string `json:"action" jsonschema:"list, open, select or close."`
	Index  *int   `json:"index,omitempty" jsonschema:"Tab index (0-based) for select and close."`
	URL    string `json:"url,omitempty" jsonschema:"For open: the URL to load in the new tab."`
	sandboxArg
}

type browserResizeArgs struct {
	Width  int    `json:"width,omitempty" jsonschema:"Viewport width in CSS pixels (100-4096)."`
	Height int    `json:"height,omitempty" jsonschema:"Viewport height in CSS pixels (100-4096)."`
	Device string `json:"device,omitempty" jsonschema:"Preset: mobile (390x844, scale 3, iPhone, touch), tablet (820x1180, scale 2, iPad, touch), desktop (1280x800), or a named device such as iphone-15, pixel-8, ipad or desktop-hd, with that device's viewport, scale, mobile layout, touch and user agent. An unknown name gets an error listing every preset."`
	sandboxArg
}

type browserPDFArgs struct {
	Path string `json:"path" jsonschema:"Where to save the PDF; relative paths resolve against /workspace."`
	sandboxArg
}

const browserNote = " Needs a sandbox with a browser (sandbox_create {image: \"sandgate/browser:latest\"}); Chromium starts on the first browser call."

// browserTool builds one browser tool; hints are read-only and destructive.
func browserTool[A any](name, desc string, readOnly, destructive bool, summary func(map[string]any) map[string]string,
	req func(A) protocol.BrowserRequest, text func(protocol.BrowserResult) string) toolDef {
	opts := []mcpapi.ToolOption{argsSchema[A](), mcpapi.WithDescription(desc + browserNote),
		mcpapi.WithReadOnlyHintAnnotation(readOnly), mcpapi.WithDestructiveHintAnnotation(destructive)}
	return toolDef{category: catBrowser, needsBox: true, summary: summary, tool: mcpapi.NewTool(name, opts...),
		run: func(ctx context.Context, c *call) (*mcpapi.CallToolResult, error) {
			a, err := bind[A](c)
			if err != nil {
				return nil, err
			}
			return runBrowser(ctx, c, req(a), text)
		}}
}

func browserTools() []toolDef {
	target := summarize("ref", "selector")
	return []toolDef{
		browserTool("browser_navigate", "Load a URL in the current browser tab and wait for it; returns the final URL, title and HTTP status.", false, false, summarize("url"),
			func(a browserNavigateArgs) protocol.BrowserRequest {
				return protocol.BrowserRequest{Action: protocol.BrowserNavigate, URL: a.URL}
			}, pageText),
		browserTool("browser_navigate_back", "Go back to the previous page of the current tab.", false, false, summarize(),
			func(browserNoArgs) protocol.BrowserRequest {
				return protocol.BrowserRequest{Action: protocol.BrowserBack}
			}, pageText),
		browserTool("browser_snapshot", "Read the current page as text: headings, text and every interactive element with a ref (e12) to pass to the other browser tools. Refs stay valid until the next snapshot or navigation.", true, false, summarize(),
			func(browserNoArgs) protocol.BrowserRequest {
				return protocol.BrowserRequest{Action: protocol.BrowserSnapshot}
			},
			func(r protocol.BrowserResult) string { return r.Snapshot }),
		browserTool("browser_click", "Click an element (by ref from browser_snapshot, or selector) with the mouse, and wait for a navigation it starts.", false, true, target,
			func(a browserTargetArgs) protocol.BrowserRequest {
				return protocol.BrowserRequest{Action: protocol.BrowserClick, Ref: a.Ref, Selector: a.Selector}
			}, pageText),
		browserTool("browser_hover", "Move the mouse over an element.", true, false, target,
			func(a browserTargetArgs) protocol.BrowserRequest {
				return protocol.BrowserRequest{Action: protocol.BrowserHover, Ref: a.Ref, Selector: a.Selector}
			}, pageText),
		browserTool("browser_type", "Replace the content of a text field with text, optionally pressing Enter afterwards.", false, true, target,
			func(a browserTypeArgs) protocol.BrowserRequest {
				return protocol.BrowserRequest{Action: protocol.BrowserType, Ref: a.Ref, Selector: a.Selector, Text: a.Text, Submit: a.Submit}
			}, pageText),
		browserTool("browser_fill_form", "Fill several form fields at once: text fields, selects, checkboxes and radio buttons.", false, true, summarize(),
			func(a browserFillFormArgs) protocol.BrowserRequest {
				req := protocol.BrowserRequest{Action: protocol.BrowserFillForm}
				for _, f := range a.Fields {
					req.Fields = append(req.Fields, protocol.FormField{Ref: f.Ref, Selector: f.Selector, Value: f.Value})
				}
				return req
			}, pageText),
		browserTool("browser_select_option", "Select options in a <select> by value or label.", false, true, target,
			func(a browserSelectOptionArgs) protocol.BrowserRequest {
				return protocol.BrowserRequest{Action: protocol.BrowserSelectOption, Ref: a.Ref, Selector: a.Selector, Values: a.Values}
			}, pageText),
		browserTool("browser_press_key", "Press a key in the page (to the focused element), e.g. Enter, Tab, ArrowDown, Escape, a, Control+a.", false, true, summarize("key"),
			func(a browserPressKeyArgs) protocol.BrowserRequest {
				return protocol.BrowserRequest{Action: protocol.BrowserPressKey, Key: a.Key}
			}, pageText),
		browserTool("browser_wait_for", "Wait for text to appear, for a selector to match, or for a number of seconds.", true, false, summarize("text", "selector"),
			func(a browserWaitForArgs) protocol.BrowserRequest {
				return protocol.BrowserRequest{Action: protocol.BrowserWaitFor, WaitText: a.Text, WaitSelector: a.Selector, WaitMs: millis(a.Time)}
			}, pageText),
		{category: catBrowser, needsBox: true, summary: target, run: runBrowserScreenshot,
			tool: mcpapi.NewTool("browser_screenshot", argsSchema[browserScreenshotArgs](), mcpapi.WithReadOnlyHintAnnotation(true), mcpapi.WithDestructiveHintAnnotation(false),
				mcpapi.WithDescription("Take a PNG screenshot of the viewport, the full page, or one element (ref or selector); returned as an image."+browserNote))},
		browserTool("browser_evaluate", "Run JavaScript in the page and return its result as JSON (the text content is the JSON).", false, true, summarize("expression"),
			func(a browserEvaluateArgs) protocol.BrowserRequest {
				return protocol.BrowserRequest{Action: protocol.BrowserEvaluate, Expression: a.Expression}
			}, func(r protocol.BrowserResult) string { return string(r.Value) }),
		browserTool("browser_console_messages", "List the console messages (console.log, errors, uncaught exceptions, dialogs) of the current tab since it opened.", true, false, summarize(),
			func(browserNoArgs) protocol.BrowserRequest {
				return protocol.BrowserRequest{Action: protocol.BrowserConsole}
			}, consoleText),
		browserTool("browser_tabs", "List, open, select or close browser tabs. Tabs the page opens appear in the list.", false, false, summarize("action", "url"),
			func(a browserTabsArgs) protocol.BrowserRequest {
				return protocol.BrowserRequest{Action: protocol.BrowserTabs, TabAction: a.Action, Index: a.Index, URL: a.URL}
			}, tabsText),
		browserTool("browser_resize", "Resize the viewport (width, height) or emulate a device: mobile, tablet, desktop or a named one such as iphone-15, pixel-8 or ipad.", false, false, summarize("device"),
			func(a browserResizeArgs) protocol.BrowserRequest {
				return protocol.BrowserRequest{Action: protocol.BrowserResize, Width: a.Width, Height: a.Height, Device: a.Device}
			}, pageText),
		browserTool("browser_pdf", "Print the current page to a PDF file in the sandbox.", false, true, summarize("path"),
			func(a browserPDFArgs) protocol.BrowserRequest {
				return protocol.BrowserRequest{Action: protocol.BrowserPDF, Path: a.Path}
			}, pageText),
	}
}

// runBrowser sends one browser action to the sandbox's runner.
func runBrowser(ctx context.Context, c *call, req protocol.BrowserRequest, text func(protocol.BrowserResult) string) (*mcpapi.CallToolResult, error) {
	res, err := c.browser(ctx, req)
	if err != nil {
		return nil, err
	}
	return structured(res, text(res), false), nil
}

func (c *call) browser(ctx context.Context, req protocol.BrowserRequest) (protocol.BrowserResult, error) {
	limit := c.g.cfg.Limits.CallTimeout
	timeout := min(browserTimeout, limit)
	if req.Action == protocol.BrowserWaitFor {
		timeout = limit
	}
	req.TimeoutMs = timeout.Milliseconds()
	// Backstop: the runner enforces the timeout; this bounds the wait if
	// it stops answering. A first call also starts Chromium.
	ctx, cancel := context.WithTimeout(ctx, timeout+45*time.Second)
	defer cancel()
	var res protocol.BrowserResult
	if err := c.runner.Call(ctx, protocol.OpBrowser, req, &res); err != nil {
		if protocol.CodeOf(err) == protocol.CodeUnsupported {
			return res, errNoBrowser
		}
		return res, err
	}
	return res, nil
}

func runBrowserScreenshot(ctx context.Context, c *call) (*mcpapi.CallToolResult, error) {
	a, err := bind[browserScreenshotArgs](c)
	if err != nil {
		return nil, err
	}
	res, err := c.browser(ctx, protocol.BrowserRequest{Action: protocol.BrowserScreenshot, FullPage: a.FullPage, Ref: a.Ref, Selector: a.Selector})
	if err != nil {
		return nil, err
	}
	img := base64.StdEncoding.EncodeToString(res.PNG)
	res.PNG = nil // the image content carries it; structuredContent keeps the rest
	out := structured(res, pageText(res), false)
	out.Content = append(out.Content, mcpapi.NewImageContent(img, "image/png"))
	return out, nil
}

// pageText is an action's message and where the tab is.
func pageText(r protocol.BrowserResult) string {
	var b strings.Builder
	b.WriteString(r.Message)
	if r.URL != "" {
		fmt.Fprintf(&b, "\nPage: %s", r.URL)
		if r.Title != "" {
			fmt.Fprintf(&b, " (%s)", r.Title)
		}
	}
	return strings.TrimSpace(b.String())
}

func consoleText(r protocol.BrowserResult) string {
	var b strings.Builder
	for _, m := range r.Console {
		fmt.Fprintf(&b, "[%s] %s\n", m.Level, m.Text)
	}
	b.WriteString(r.Message)
	return b.String()
}

func tabsText(r protocol.BrowserResult) string {
	var b strings.Builder
	if r.Message != "" {
		b.WriteString(r.Message + "\n")
	}
	for _, t := range r.Tabs {
		mark := " "
		if t.Current {
			mark = "*"
		}
		fmt.Fprintf(&b, "%s %d: %s — %s\n", mark, t.Index, t.Title, t.URL)
	}
	return b.String()
}
