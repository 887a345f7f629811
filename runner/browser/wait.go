package browser

import (
	"fmt"
	"strings"
	"time"

	"github.com/chromedp/cdproto/runtime"

	"github.com/sandgate/sandgate/runner/protocol"
)

// pollEvery is how often wait_for looks at the page.
const pollEvery = 100 * time.Millisecond

func checkWaitFor(req protocol.BrowserRequest) error {
	switch {
	case req.WaitMs < 0:
		return invalidf("time must not be negative")
	case req.WaitText == "" && req.WaitSelector == "" && req.WaitMs == 0:
		return invalidf("give text to wait for, a selector, or a time in seconds")
	case req.TimeoutMs > 0 && req.WaitMs >= req.TimeoutMs:
		return invalidf("time (%d ms) must be shorter than the call's timeout (%d ms)", req.WaitMs, req.TimeoutMs)
	}
	return nil
}

// runWaitFor waits for the time, then for the text, then for the selector,
// whichever are given. The page may navigate meanwhile: each look is made
// in whatever document the tab has then.
func runWaitFor(s *session, req protocol.BrowserRequest) (protocol.BrowserResult, error) {
	began := time.Now()
	var done []string
	if req.WaitMs > 0 {
		select {
		case <-time.After(time.Duration(req.WaitMs) * time.Millisecond):
		case <-s.ctx.Done():
			return protocol.BrowserResult{}, s.ctx.Err()
		}
		done = append(done, fmt.Sprintf("waited %.1f s", float64(req.WaitMs)/1000))
	}
	if req.WaitText != "" {
		if err := s.poll(fmt.Sprintf("text %q", req.WaitText), func() (bool, error) {
			var found bool
			err := s.jsValue(&found, "hasText", req.WaitText)
			return found, err
		}); err != nil {
			return protocol.BrowserResult{}, err
		}
		done = append(done, fmt.Sprintf("text %q appeared", req.WaitText))
	}
	if req.WaitSelector != "" {
		if err := s.poll(fmt.Sprintf("selector %q", req.WaitSelector), func() (bool, error) {
			r, err := s.js("query", false, req.WaitSelector)
			if err != nil && strings.Contains(err.Error(), "not a valid") {
				return false, invalidf("selector %q is not valid: %v", req.WaitSelector, err)
			}
			return err == nil && r.Type == runtime.RemoteObjectTypeObject, nil
		}); err != nil {
			return protocol.BrowserResult{}, err
		}
		done = append(done, fmt.Sprintf("selector %q matched", req.WaitSelector))
	}
	res := protocol.BrowserResult{}
	res.URL, res.Title = s.pageInfo()
	res.Message = fmt.Sprintf("%s after %.1f s", strings.Join(done, ", "), time.Since(began).Seconds())
	return res, nil
}

// poll calls look until it reports true, returns a protocol error, or the
// action's time runs out. Other errors (the page is between documents)
// count as "not yet".
func (s *session) poll(what string, look func() (bool, error)) error {
	began := time.Now()
	for {
		ok, err := look()
		if pe, isPE := err.(*protocol.Error); isPE && pe.Code == protocol.CodeInvalid {
			return pe
		}
		if ok {
			return nil
		}
		select {
		case <-time.After(pollEvery):
		case <-s.ctx.Done():
			return failf("%s did not appear within %.1f s", what, time.Since(began).Seconds())
		}
	}
}
