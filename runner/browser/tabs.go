package browser

import (
	"context"
	"fmt"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/sandgate/sandgate/runner/protocol"
)

// Tab actions.
const (
	tabsList   = "list"
	tabsOpen   = "open"
	tabsSelect = "select"
	tabsClose  = "close"
)

func checkTabs(req protocol.BrowserRequest) error {
	switch req.TabAction {
	case "", tabsList:
	case tabsOpen:
		if req.URL != "" {
			return checkURL(req.URL)
		}
	case tabsSelect, tabsClose:
		if req.Index == nil {
			return invalidf("tabs %s needs index (0-based, as browser_tabs {action: list} shows)", req.TabAction)
		}
	default:
		return invalidf("unknown tabs action %q; use list, open, select or close", req.TabAction)
	}
	return nil
}

func runTabs(s *session, req protocol.BrowserRequest) (protocol.BrowserResult, error) {
	s.in.syncTabs(s.ctx)
	var msg string
	switch req.TabAction {
	case "", tabsList:
	case tabsOpen:
		t, err := s.in.openTab(s.call)
		if err != nil {
			return protocol.BrowserResult{}, err
		}
		s.in.cur = len(s.in.tabs) - 1
		if err := s.use(t); err != nil {
			return protocol.BrowserResult{}, err
		}
		msg = fmt.Sprintf("opened tab %d", s.in.cur)
		if req.URL != "" {
			nav, err := runNavigate(s, req)
			if err != nil {
				return protocol.BrowserResult{}, wrapf(err, "opened tab %d, but", s.in.cur)
			}
			msg += "; " + nav.Message
		}
	case tabsSelect:
		i, err := s.in.tabIndex(*req.Index)
		if err != nil {
			return protocol.BrowserResult{}, err
		}
		if err := s.use(s.in.tabs[i]); err != nil {
			return protocol.BrowserResult{}, err
		}
		s.in.cur = i
		msg = fmt.Sprintf("tab %d is now the current tab", i)
	case tabsClose:
		i, err := s.in.tabIndex(*req.Index)
		if err != nil {
			return protocol.BrowserResult{}, err
		}
		if msg, err = s.closeTab(i); err != nil {
			return protocol.BrowserResult{}, err
		}
	}
	res := protocol.BrowserResult{Tabs: s.in.listTabs(s.ctx), Message: msg}
	res.URL, res.Title = s.pageInfo()
	return res, nil
}

// closeTab closes tab i; the last tab is replaced by a blank one, since a
// browser without tabs may quit.
func (s *session) closeTab(i int) (string, error) {
	msg := fmt.Sprintf("closed tab %d", i)
	if len(s.in.tabs) == 1 {
		if _, err := s.in.openTab(s.call); err != nil {
			return "", err
		}
		msg += "; it was the last one, so a blank tab took its place"
	}
	t := s.in.tabs[i]
	if t.cancel != nil {
		t.cancel() // detaches and closes the target
	} else if _, err := chromedp.CallBrowser(s.ctx, target.CloseTarget, target.CloseTargetParams{TargetID: t.id}); err != nil {
		return "", wrapf(err, "close tab %d", i)
	}
	s.in.tabs = append(s.in.tabs[:i], s.in.tabs[i+1:]...)
	if s.in.cur > i || s.in.cur >= len(s.in.tabs) {
		s.in.cur = max(s.in.cur-1, 0)
	}
	if err := s.use(s.in.tabs[s.in.cur]); err != nil {
		return "", err
	}
	return msg + fmt.Sprintf("; tab %d is the current tab", s.in.cur), nil
}

func (in *instance) tabIndex(i int) (int, error) {
	if i < 0 || i >= len(in.tabs) {
		return 0, notFoundf("there is no tab %d; the tabs are 0 to %d (browser_tabs {action: list})", i, len(in.tabs)-1)
	}
	return i, nil
}

// openTab opens a blank tab at the end of the list.
func (in *instance) openTab(call context.Context) (*tab, error) {
	t := &tab{}
	t.ctx, t.cancel = chromedp.NewContext(in.root)
	// The first Run creates the target and binds its event loop to t.ctx.
	err := runLong(t.ctx, call, func(ctx context.Context) error {
		_, err := chromedp.Run(ctx, chromedp.Func(func(context.Context, *chromedp.Target) error { return nil }))
		return err
	})
	if err != nil {
		t.cancel()
		return nil, wrapf(err, "open a tab")
	}
	t.id = chromedp.FromContext(t.ctx).Target.TargetID
	in.tabs = append(in.tabs, t)
	return t, nil
}

// syncTabs brings the tab list up to date with the browser's page targets:
// tabs the pages closed leave it, tabs they opened (window.open, links
// with target=_blank) join it at the end. It returns the indexes of the
// new tabs.
func (in *instance) syncTabs(ctx context.Context) []int {
	res, err := chromedp.CallBrowser(ctx, target.GetTargets, target.GetTargetsParams{})
	if err != nil {
		return nil
	}
	live := map[target.ID]bool{}
	for _, info := range res.TargetInfos {
		if info.Type == "page" {
			live[info.TargetID] = true
		}
	}
	known := map[target.ID]bool{}
	kept := in.tabs[:0]
	for i, t := range in.tabs {
		known[t.id] = true
		if live[t.id] {
			kept = append(kept, t)
			continue
		}
		if t.cancel != nil {
			t.cancel()
		}
		if in.cur >= i && in.cur > 0 {
			in.cur--
		}
	}
	in.tabs = kept
	var opened []int
	for _, info := range res.TargetInfos {
		if info.Type == "page" && !known[info.TargetID] {
			in.tabs = append(in.tabs, &tab{id: info.TargetID})
			opened = append(opened, len(in.tabs)-1)
		}
	}
	return opened
}

// listTabs describes the tabs, from the browser's target list so that a
// hung page cannot hold it up.
func (in *instance) listTabs(ctx context.Context) []protocol.BrowserTab {
	infos := map[target.ID]*target.Info{}
	if res, err := chromedp.CallBrowser(ctx, target.GetTargets, target.GetTargetsParams{}); err == nil {
		for _, info := range res.TargetInfos {
			infos[info.TargetID] = info
		}
	}
	out := make([]protocol.BrowserTab, len(in.tabs))
	for i, t := range in.tabs {
		out[i] = protocol.BrowserTab{Index: i, Current: i == in.cur}
		if info := infos[t.id]; info != nil {
			out[i].URL, out[i].Title = info.URL, info.Title
		}
	}
	return out
}
