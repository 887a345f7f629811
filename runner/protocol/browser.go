package protocol

import "encoding/json"

// OpBrowser drives the sandbox's Chromium: BrowserRequest → BrowserResult.
// One op with an Action keeps the wire small; each action documents the
// fields it reads.
const OpBrowser Op = "browser"

// Browser actions.
const (
	BrowserNavigate     = "navigate"      // URL
	BrowserBack         = "back"          //
	BrowserSnapshot     = "snapshot"      //
	BrowserClick        = "click"         // Ref or Selector
	BrowserHover        = "hover"         // Ref or Selector
	BrowserType         = "type"          // Ref or Selector, Text, Submit
	BrowserFillForm     = "fill_form"     // Fields
	BrowserSelectOption = "select_option" // Ref or Selector, Values
	BrowserPressKey     = "press_key"     // Key
	BrowserWaitFor      = "wait_for"      // WaitText, WaitSelector or WaitMs
	BrowserScreenshot   = "screenshot"    // FullPage, Ref or Selector
	BrowserEvaluate     = "evaluate"      // Expression
	BrowserConsole      = "console"       //
	BrowserTabs         = "tabs"          // TabAction (list, open, select, close), Index, URL
	BrowserResize       = "resize"        // Width, Height or Device (mobile, tablet, desktop)
	BrowserPDF          = "pdf"           // Path
)

// BrowserRequest is one browser action.
type BrowserRequest struct {
	Action       string      `json:"action"`
	URL          string      `json:"url,omitempty"`
	Ref          string      `json:"ref,omitempty"`
	Selector     string      `json:"selector,omitempty"`
	Text         string      `json:"text,omitempty"`
	Submit       bool        `json:"submit,omitempty"`
	Fields       []FormField `json:"fields,omitempty"`
	Values       []string    `json:"values,omitempty"`
	Key          string      `json:"key,omitempty"`
	WaitText     string      `json:"wait_text,omitempty"`
	WaitSelector string      `json:"wait_selector,omitempty"`
	WaitMs       int64       `json:"wait_ms,omitempty"`
	FullPage     bool        `json:"full_page,omitempty"`
	Expression   string      `json:"expression,omitempty"`
	TabAction    string      `json:"tab_action,omitempty"`
	Index        *int        `json:"index,omitempty"`
	Width        int         `json:"width,omitempty"`
	Height       int         `json:"height,omitempty"`
	Device       string      `json:"device,omitempty"`
	Path         string      `json:"path,omitempty"`
	TimeoutMs    int64       `json:"timeout_ms,omitempty"`
}

// FormField is one field of fill_form.
type FormField struct {
	Ref      string `json:"ref,omitempty"`
	Selector string `json:"selector,omitempty"`
	Value    string `json:"value"`
}

// BrowserResult is what an action reports; fields are set as they apply.
type BrowserResult struct {
	URL      string           `json:"url,omitempty"`
	Title    string           `json:"title,omitempty"`
	Status   int              `json:"status,omitempty"`   // HTTP status of a navigation
	Snapshot string           `json:"snapshot,omitempty"` // text snapshot with refs
	PNG      []byte           `json:"png,omitempty"`      // screenshot
	Width    int              `json:"width,omitempty"`
	Height   int              `json:"height,omitempty"`
	Value    json.RawMessage  `json:"value,omitempty"` // evaluate result as JSON
	Console  []ConsoleMessage `json:"console,omitempty"`
	Tabs     []BrowserTab     `json:"tabs,omitempty"`
	Path     string           `json:"path,omitempty"` // pdf written
	Bytes    int64            `json:"bytes,omitempty"`
	Message  string           `json:"message,omitempty"`
}

// ConsoleMessage is one console entry of the current tab.
type ConsoleMessage struct {
	Level string `json:"level"`
	Text  string `json:"text"`
}

// BrowserTab describes one tab.
type BrowserTab struct {
	Index   int    `json:"index"`
	URL     string `json:"url"`
	Title   string `json:"title"`
	Current bool   `json:"current"`
}
