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
	BrowserRoute        = "route"         // RouteAction (add, list, remove, clear), Route, RouteID
	BrowserRecord       = "record"        // RecordAction (start, stop), Path
)

// Route actions of BrowserRoute.
const (
	RouteAdd    = "add"
	RouteList   = "list"
	RouteRemove = "remove"
	RouteClear  = "clear"
)

// Record actions of BrowserRecord.
const (
	RecordStart = "start"
	RecordStop  = "stop"
)

// Bounds of network interception and recording, decided here so that the
// gateway's descriptions and the runner agree.
const (
	MaxRoutes         = 32      // routes at once per sandbox
	MaxRouteBodyBytes = 1 << 20 // a fulfilled body
	MaxHAREntries     = 5000    // requests in one recording
	MaxHARBytes       = 32 << 20
)

// Route fulfils or blocks the requests whose URL matches Pattern:
// a glob over the whole URL (* any characters, ? one, \ escapes) or, with
// Regex, an RE2 expression that must match somewhere in it.
type Route struct {
	ID      string            `json:"id,omitempty"` // set by the runner
	Pattern string            `json:"pattern"`
	Regex   bool              `json:"regex,omitempty"`
	Block   bool              `json:"block,omitempty"` // fail the request (net::ERR_BLOCKED_BY_CLIENT)
	Status  int               `json:"status,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    []byte            `json:"body,omitempty"`
	Hits    int               `json:"hits"` // requests it answered
}

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
	RouteAction  string      `json:"route_action,omitempty"`
	Route        *Route      `json:"route,omitempty"`
	RouteID      string      `json:"route_id,omitempty"`
	RecordAction string      `json:"record_action,omitempty"`
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
	Path     string           `json:"path,omitempty"` // pdf or recording written
	Bytes    int64            `json:"bytes,omitempty"`
	Routes   []Route          `json:"routes,omitempty"`
	Entries  int              `json:"entries,omitempty"` // requests in a recording
	Dropped  int              `json:"dropped,omitempty"` // requests left out of it at the caps
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
