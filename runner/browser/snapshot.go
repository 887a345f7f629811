package browser

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/sandgate/sandgate/runner/protocol"
)

// MaxSnapshot bounds a snapshot's text.
const MaxSnapshot = 64 << 10

// snapNode is one node of world.js's snapshot.
type snapNode struct {
	Role        string     `json:"role"`
	Name        string     `json:"name,omitempty"`
	Ref         string     `json:"ref,omitempty"`
	Level       int        `json:"level,omitempty"`
	Value       string     `json:"value,omitempty"`
	Placeholder string     `json:"placeholder,omitempty"`
	URL         string     `json:"url,omitempty"`
	Text        string     `json:"text,omitempty"` // the node's only content
	Props       []string   `json:"props,omitempty"`
	Children    []snapNode `json:"children,omitempty"`
}

type snapResult struct {
	Nodes     []snapNode `json:"nodes"`
	Next      int        `json:"next"`
	Truncated bool       `json:"truncated"`
}

func runSnapshot(s *session, _ protocol.BrowserRequest) (protocol.BrowserResult, error) {
	_, doc, err := s.world()
	if err != nil {
		return protocol.BrowserResult{}, err
	}
	var r snapResult
	if err := s.jsValue(&r, "snapshot", s.m.nextRef); err != nil {
		return protocol.BrowserResult{}, wrapf(err, "take a snapshot")
	}
	s.m.nextRef = max(s.m.nextRef, r.Next)
	s.t.refs = refTable{doc: doc, refs: refsOf(r.Nodes, map[string]bool{})}

	res := protocol.BrowserResult{}
	res.URL, res.Title = s.pageInfo()
	head := fmt.Sprintf("Page URL: %s\nPage title: %s\n", res.URL, res.Title)
	body, cut := formatSnapshot(r.Nodes, MaxSnapshot-len(head)-200)
	res.Snapshot = head + body
	switch {
	case cut > 0:
		res.Snapshot += fmt.Sprintf("[snapshot truncated at %d KiB: %d more lines not shown; reach them with a selector or browser_evaluate]\n", MaxSnapshot>>10, cut)
	case r.Truncated:
		res.Snapshot += "[the page has more elements than a snapshot walks; the rest is not shown]\n"
	}
	res.Message = fmt.Sprintf("%d refs; refs stay valid until the next snapshot or navigation", len(s.t.refs.refs))
	return res, nil
}

// formatSnapshot renders nodes as an indented list of at most limit bytes,
// whole lines only, and returns how many lines did not fit.
func formatSnapshot(nodes []snapNode, limit int) (string, int) {
	var b strings.Builder
	left := 0
	var walk func(ns []snapNode, depth int)
	walk = func(ns []snapNode, depth int) {
		for _, n := range ns {
			line := strings.Repeat("  ", depth) + "- " + snapLine(n) + "\n"
			if left > 0 || b.Len()+len(line) > limit {
				left++
			} else {
				b.WriteString(line)
			}
			walk(n.Children, depth+1)
		}
	}
	walk(nodes, 0)
	if b.Len() == 0 && left == 0 {
		return "(the page shows nothing)\n", 0
	}
	return b.String(), left
}

// snapLine is one node: role "name" [props] [ref=eN] -> url: "value",
// or ": text" when its only content is text.
func snapLine(n snapNode) string {
	if n.Role == "text" {
		return "text: " + n.Name
	}
	var b strings.Builder
	b.WriteString(n.Role)
	if n.Name != "" {
		b.WriteString(" " + strconv.Quote(n.Name))
	}
	if n.Level > 0 {
		fmt.Fprintf(&b, " [level=%d]", n.Level)
	}
	for _, p := range n.Props {
		b.WriteString(" [" + p + "]")
	}
	if n.Placeholder != "" {
		fmt.Fprintf(&b, " [placeholder=%s]", strconv.Quote(n.Placeholder))
	}
	if n.Ref != "" {
		b.WriteString(" [ref=" + n.Ref + "]")
	}
	if n.URL != "" {
		b.WriteString(" -> " + n.URL)
	}
	switch {
	case n.Value != "":
		b.WriteString(": " + strconv.Quote(n.Value))
	case n.Text != "":
		b.WriteString(": " + n.Text)
	}
	return b.String()
}

// pageInfo returns the current tab's URL and title, from the page when it
// answers quickly, else from the browser's target list (a hung page).
func (s *session) pageInfo() (string, string) {
	ctx, cancel := context.WithTimeout(s.ctx, time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[[2]string]("[location.href, document.title]"))
	if err == nil {
		return v[0], v[1]
	}
	info, err := chromedp.CallBrowser(s.ctx, target.GetTargetInfo, target.GetTargetInfoParams{TargetID: s.t.id})
	if err != nil || info.TargetInfo == nil {
		return "", ""
	}
	return info.TargetInfo.URL, info.TargetInfo.Title
}
