package browser

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/sandgate/sandgate/runner/protocol"
)

func runClick(s *session, req protocol.BrowserRequest) (protocol.BrowserResult, error) {
	what := describeTarget(req.Ref, req.Selector)
	el, err := s.element(req.Ref, req.Selector)
	if err != nil {
		return protocol.BrowserResult{}, err
	}
	seq, _, _ := s.t.nav.state()
	if err := s.click(el, what); err != nil {
		return protocol.BrowserResult{}, err
	}
	return s.afterInput("clicked "+what, seq)
}

// click moves the mouse to the element's centre and clicks there, as a
// user would, so the page sees the whole pointer and mouse sequence.
func (s *session) click(el runtime.RemoteObjectID, what string) error {
	x, y, err := s.pointAt(el, what, true)
	if err != nil {
		return err
	}
	for _, p := range []input.DispatchMouseEventParams{
		{Type: chromedp.MouseMoved, X: x, Y: y},
		{Type: chromedp.MousePressed, X: x, Y: y, Button: input.MouseButtonLeft, Buttons: 1, ClickCount: 1},
		{Type: chromedp.MouseReleased, X: x, Y: y, Button: input.MouseButtonLeft, ClickCount: 1},
	} {
		if _, err := chromedp.Call(s.ctx, input.DispatchMouseEvent, p); err != nil {
			return wrapf(err, "click %s", what)
		}
	}
	return nil
}

func runHover(s *session, req protocol.BrowserRequest) (protocol.BrowserResult, error) {
	what := describeTarget(req.Ref, req.Selector)
	el, err := s.element(req.Ref, req.Selector)
	if err != nil {
		return protocol.BrowserResult{}, err
	}
	x, y, err := s.pointAt(el, what, false)
	if err != nil {
		return protocol.BrowserResult{}, err
	}
	if _, err := chromedp.Call(s.ctx, input.DispatchMouseEvent, input.DispatchMouseEventParams{Type: chromedp.MouseMoved, X: x, Y: y}); err != nil {
		return protocol.BrowserResult{}, wrapf(err, "hover over %s", what)
	}
	res := protocol.BrowserResult{Message: "the mouse is over " + what}
	res.URL, res.Title = s.pageInfo()
	return res, nil
}

func runType(s *session, req protocol.BrowserRequest) (protocol.BrowserResult, error) {
	what := describeTarget(req.Ref, req.Selector)
	el, err := s.element(req.Ref, req.Selector)
	if err != nil {
		return protocol.BrowserResult{}, err
	}
	seq, _, _ := s.t.nav.state()
	if err := s.fillText(el, what, req.Text); err != nil {
		return protocol.BrowserResult{}, err
	}
	msg := fmt.Sprintf("typed %d characters into %s", len([]rune(req.Text)), what)
	if req.Submit {
		if err := s.press("Enter"); err != nil {
			return protocol.BrowserResult{}, err
		}
		msg += " and pressed Enter"
	}
	return s.afterInput(msg, seq)
}

// fillText replaces the content of an editable element with text, through
// the browser's input pipeline (as an IME would insert it), so the page's
// input handlers run as for a user.
func (s *session) fillText(el runtime.RemoteObjectID, what, text string) error {
	var notEditable string
	if err := s.callOn(el, &notEditable, "focusText"); err != nil {
		return wrapf(err, "focus %s", what)
	}
	if notEditable != "" {
		return failf("%s is %s, which takes no typing; choose a textbox, textarea or contenteditable element", what, notEditable)
	}
	if text == "" {
		return s.press("Delete")
	}
	if _, err := chromedp.Call(s.ctx, input.InsertText, input.InsertTextParams{Text: text}); err != nil {
		return wrapf(err, "type into %s", what)
	}
	return nil
}

func checkPressKey(req protocol.BrowserRequest) error {
	_, err := parseKey(req.Key)
	return err
}

func runPressKey(s *session, req protocol.BrowserRequest) (protocol.BrowserResult, error) {
	seq, _, _ := s.t.nav.state()
	if err := s.press(req.Key); err != nil {
		return protocol.BrowserResult{}, err
	}
	return s.afterInput("pressed "+req.Key, seq)
}

// press sends a key to the focused element.
func (s *session) press(key string) error {
	evs, err := parseKey(key)
	if err != nil {
		return err
	}
	for _, e := range evs {
		if _, err := chromedp.Call(s.ctx, input.DispatchKeyEvent, *e); err != nil {
			return wrapf(err, "press %s", key)
		}
	}
	return nil
}

func checkSelectOption(req protocol.BrowserRequest) error {
	if len(req.Values) == 0 {
		return invalidf("values is empty; give the option values or labels to select")
	}
	return checkTarget(req)
}

func runSelectOption(s *session, req protocol.BrowserRequest) (protocol.BrowserResult, error) {
	what := describeTarget(req.Ref, req.Selector)
	el, err := s.element(req.Ref, req.Selector)
	if err != nil {
		return protocol.BrowserResult{}, err
	}
	seq, _, _ := s.t.nav.state()
	selected, err := s.selectOptions(el, what, req.Values)
	if err != nil {
		return protocol.BrowserResult{}, err
	}
	return s.afterInput(fmt.Sprintf("selected %s in %s", quoteAll(selected), what), seq)
}

func (s *session) selectOptions(el runtime.RemoteObjectID, what string, values []string) ([]string, error) {
	var r struct {
		Error    string   `json:"error"`
		Selected []string `json:"selected"`
	}
	if err := s.callOn(el, &r, "selectOptions", values); err != nil {
		return nil, wrapf(err, "select in %s", what)
	}
	if r.Error != "" {
		return nil, failf("%s: %s", what, r.Error)
	}
	return r.Selected, nil
}

// afterInput finishes an action that may have started a navigation or
// opened a tab: it waits for the page to load (not beyond the action's
// time, and saying so) and reports where the tab is now.
func (s *session) afterInput(done string, seq int) (protocol.BrowserResult, error) {
	budget := 15 * time.Second
	if d, ok := s.ctx.Deadline(); ok {
		budget = min(budget, time.Until(d)-time.Second)
	}
	ctx, cancel := context.WithTimeout(s.ctx, max(budget, 0))
	// The page answers this only after the action's event handlers ran,
	// so a navigation they started has been requested by now.
	rt, cancelRT := context.WithTimeout(ctx, time.Second)
	_, _ = chromedp.Call(rt, runtime.Evaluate, runtime.EvaluateParams{Expression: "0"})
	cancelRT()
	navigated, err := s.t.nav.settle(ctx, seq)
	cancel()
	res := protocol.BrowserResult{}
	res.URL, res.Title = s.pageInfo()
	msg := done
	switch {
	case navigated && err != nil:
		msg += "; the page started loading " + res.URL + " and had not finished yet (use browser_wait_for)"
	case navigated:
		msg += "; the page navigated to " + res.URL
	}
	if opened := s.in.syncTabs(s.ctx); len(opened) > 0 {
		for _, i := range opened {
			// Attached now, so its console is kept from here on.
			_ = s.in.attach(s.call, s.m.view, s.in.tabs[i])
		}
		i := opened[0]
		msg += fmt.Sprintf("; it opened a new tab (index %d); switch to it with browser_tabs {action: select, index: %d}", i, i)
	}
	res.Message = msg
	return res, nil
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}
