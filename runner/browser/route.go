package browser

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/sandgate/sandgate/runner/protocol"
)

// route is one interception rule with its compiled pattern.
type route struct {
	protocol.Route
	re *regexp.Regexp
}

// compileRoute checks r and compiles its pattern.
func compileRoute(r protocol.Route) (*route, error) {
	if r.Pattern == "" {
		return nil, invalidf("route pattern is empty; give a URL glob such as *://api.example.com/* (or a regex with regex: true)")
	}
	expr := r.Pattern
	if !r.Regex {
		expr = globRegexp(r.Pattern)
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, invalidf("route pattern %q is not a valid regular expression (RE2 syntax): %v", r.Pattern, err)
	}
	if r.Block && (r.Status != 0 || len(r.Body) > 0 || len(r.Headers) > 0) {
		return nil, invalidf("a route blocks or fulfils, not both: drop block, or drop status, headers and body")
	}
	if !r.Block {
		if r.Status == 0 {
			r.Status = http.StatusOK
		}
		if r.Status < 100 || r.Status > 599 {
			return nil, invalidf("route status %d is not an HTTP status; give 100 to 599", r.Status)
		}
	}
	if len(r.Body) > protocol.MaxRouteBodyBytes {
		return nil, invalidf("route body is %d bytes; the most is %d", len(r.Body), protocol.MaxRouteBodyBytes)
	}
	for name := range r.Headers {
		if name == "" || strings.ContainsAny(name, " :\r\n") {
			return nil, invalidf("route header name %q is not a valid header name", name)
		}
	}
	r.Hits = 0
	return &route{Route: r, re: re}, nil
}

// globRegexp translates a URL glob to an anchored regexp: * is any run of
// characters (slashes too), ? one character, \ escapes the next one. It
// is Chromium's own Fetch urlPattern syntax, so the patterns given to
// Fetch.enable pause exactly the requests match then finds a route for.
func globRegexp(glob string) string {
	var b strings.Builder
	b.WriteString("^")
	rs := []rune(glob)
	for i := 0; i < len(rs); i++ {
		switch c := rs[i]; {
		case c == '*':
			b.WriteString(".*")
		case c == '?':
			b.WriteString(".")
		case c == '\\' && i+1 < len(rs):
			i++
			b.WriteString(regexp.QuoteMeta(string(rs[i])))
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return b.String()
}

// fetchPatterns are the Fetch.enable patterns for routes: each glob as it
// is, or everything when a regex route needs Go to decide.
func fetchPatterns(routes []*route) []*fetch.RequestPattern {
	var out []*fetch.RequestPattern
	for _, r := range routes {
		if r.Regex {
			return []*fetch.RequestPattern{{URLPattern: "*"}}
		}
		out = append(out, &fetch.RequestPattern{URLPattern: r.Pattern})
	}
	return out
}

// intercept turns request interception on (or off, without routes) in
// the tab of ctx.
func (t *tab) intercept(ctx context.Context, patterns []*fetch.RequestPattern) error {
	if len(patterns) == 0 {
		if !t.fetchOn {
			return nil
		}
		if _, err := chromedp.Call(ctx, fetch.Disable, cdp.Empty{}); err != nil {
			return wrapf(err, "stop intercepting requests")
		}
		t.fetchOn = false
		return nil
	}
	if _, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{Patterns: patterns}); err != nil {
		return wrapf(err, "intercept requests")
	}
	t.fetchOn = true
	return nil
}

// answer settles one paused request: as its route says, or unchanged
// when no route matches. A paused request waits for ever, so every path
// answers. It runs on its own goroutine, never on chromedp's reader.
func (n *netState) answer(t *tab, e *fetch.EventRequestPaused) {
	ctx, cancel := context.WithTimeout(t.ctx, 10*time.Second)
	defer cancel()
	r, ok := n.match(e.Request.URL)
	var err error
	switch {
	case !ok:
		_, err = chromedp.Call(ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: e.RequestID})
	case r.Block:
		_, err = chromedp.Call(ctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: e.RequestID, ErrorReason: network.ErrorReasonBlockedByClient})
	case e.Request.Method == http.MethodOptions:
		// A CORS preflight for a mocked API: allow what is asked.
		_, err = chromedp.Call(ctx, fetch.FulfillRequest, fetch.FulfillRequestParams{RequestID: e.RequestID, ResponseCode: http.StatusNoContent,
			ResponseHeaders: []*fetch.HeaderEntry{{Name: "Access-Control-Allow-Origin", Value: "*"}, {Name: "Access-Control-Allow-Methods", Value: "*"}, {Name: "Access-Control-Allow-Headers", Value: "*"}}})
	default:
		_, err = chromedp.Call(ctx, fetch.FulfillRequest, fetch.FulfillRequestParams{RequestID: e.RequestID,
			ResponseCode: int64(r.Status), ResponseHeaders: responseHeaders(r), Body: r.Body})
	}
	if err != nil && t.ctx.Err() == nil {
		n.log.Warn("answer an intercepted request", "error", err)
	}
}

// responseHeaders are a fulfilled response's headers: the route's, with
// a Content-Type sniffed from the body and a CORS header allowing every
// origin unless the route gives its own, so that a page's fetch() of a
// mocked API on another origin is not refused.
func responseHeaders(r protocol.Route) []*fetch.HeaderEntry {
	var out []*fetch.HeaderEntry
	has := map[string]bool{}
	for name, value := range r.Headers {
		out = append(out, &fetch.HeaderEntry{Name: name, Value: value})
		has[http.CanonicalHeaderKey(name)] = true
	}
	if !has["Content-Type"] {
		out = append(out, &fetch.HeaderEntry{Name: "Content-Type", Value: http.DetectContentType(r.Body)})
	}
	if !has["Access-Control-Allow-Origin"] {
		out = append(out, &fetch.HeaderEntry{Name: "Access-Control-Allow-Origin", Value: "*"})
	}
	out = append(out, &fetch.HeaderEntry{Name: "Content-Length", Value: strconv.Itoa(len(r.Body))})
	return out
}

func checkRoute(req protocol.BrowserRequest) error {
	switch req.RouteAction {
	case protocol.RouteAdd:
		if req.Route == nil {
			return invalidf("route add needs a route: a URL pattern, and block or a response (status, headers, body)")
		}
		_, err := compileRoute(*req.Route)
		return err
	case protocol.RouteRemove:
		if req.RouteID == "" {
			return invalidf("route remove needs the route's id, as browser_route {action: list} shows")
		}
	case protocol.RouteList, protocol.RouteClear:
	default:
		return invalidf("unknown route action %q; use add, list, remove or clear", req.RouteAction)
	}
	return nil
}

// runRoute changes or lists the routes, then applies them to every tab
// (tabs attached later get them on attach).
func runRoute(s *session, req protocol.BrowserRequest) (protocol.BrowserResult, error) {
	n := s.m.net
	var msg string
	switch req.RouteAction {
	case protocol.RouteAdd:
		r, err := compileRoute(*req.Route)
		if err != nil {
			return protocol.BrowserResult{}, err
		}
		if msg, err = n.add(r); err != nil {
			return protocol.BrowserResult{}, err
		}
	case protocol.RouteRemove:
		if !n.remove(req.RouteID) {
			return protocol.BrowserResult{}, notFoundf("there is no route %q; browser_route {action: list} shows the routes", req.RouteID)
		}
		msg = "removed route " + req.RouteID
	case protocol.RouteClear:
		msg = fmt.Sprintf("removed %d route(s)", n.clear())
	}
	if req.RouteAction != protocol.RouteList {
		if err := s.applyRoutes(); err != nil {
			return protocol.BrowserResult{}, err
		}
	}
	res := protocol.BrowserResult{Routes: n.list()}
	res.Message = joinMessages(msg, fmt.Sprintf("%d route(s) active", len(res.Routes)))
	return res, nil
}

// applyRoutes sets the current routes' patterns on every attached tab.
func (s *session) applyRoutes() error {
	patterns := s.m.net.patterns()
	if err := s.t.intercept(s.ctx, patterns); err != nil {
		return err
	}
	for _, t := range s.in.tabs {
		if t != s.t && t.attached {
			// Best effort, as for the view: a hung background tab must
			// not fail the change for the others.
			ctx, cancel := bound(t.ctx, s.call)
			_ = t.intercept(ctx, patterns)
			cancel()
		}
	}
	return nil
}
