package browser

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/chromedp/chromedp"

	"github.com/sandgate/sandgate/runner/protocol"
)

// schemes a tab may be sent to. The sandbox has no network, so http(s)
// reaches only servers inside it.
var schemes = map[string]bool{"http": true, "https": true, "file": true, "data": true, "about": true}

func checkNavigate(req protocol.BrowserRequest) error {
	return checkURL(req.URL)
}

func checkURL(raw string) error {
	if raw == "" {
		return invalidf("url is empty; give an absolute URL, e.g. http://127.0.0.1:8000/ or file:///workspace/index.html")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return invalidf("url %q is not absolute; give e.g. http://127.0.0.1:8000/ or file:///workspace/index.html", raw)
	}
	if !schemes[strings.ToLower(u.Scheme)] {
		return invalidf("url scheme %q is not allowed; use http, https, file, data or about", u.Scheme)
	}
	return nil
}

func runNavigate(s *session, req protocol.BrowserRequest) (protocol.BrowserResult, error) {
	resp, err := chromedp.Run(s.ctx, chromedp.NavigateResponse(req.URL))
	if err != nil {
		return protocol.BrowserResult{}, loadError(req.URL, err)
	}
	s.t.crashed.Store(false)
	res := protocol.BrowserResult{}
	res.URL, res.Title = s.pageInfo()
	res.Message = "navigated to " + res.URL
	if u, _ := url.Parse(res.URL); resp != nil && resp.Status > 0 && u != nil && (u.Scheme == "http" || u.Scheme == "https") {
		res.Status = int(resp.Status)
		res.Message += fmt.Sprintf(" (HTTP %d)", res.Status)
		if res.Status >= 400 {
			res.Message += "; the server answered with an error status"
		}
	}
	return res, nil
}

func runBack(s *session, _ protocol.BrowserRequest) (protocol.BrowserResult, error) {
	h, err := chromedp.Run(s.ctx, chromedp.NavigationEntries())
	if err != nil {
		return protocol.BrowserResult{}, wrapf(err, "read the tab's history")
	}
	if h.CurrentIndex <= 0 {
		return protocol.BrowserResult{}, failf("there is no earlier page in this tab's history")
	}
	if _, err := chromedp.Run(s.ctx, chromedp.NavigateBack()); err != nil {
		return protocol.BrowserResult{}, loadError(h.Entries[h.CurrentIndex-1].URL, err)
	}
	res := protocol.BrowserResult{}
	res.URL, res.Title = s.pageInfo()
	res.Message = "went back to " + res.URL
	return res, nil
}

// loadError explains a failed navigation; network errors get a reminder
// of what a sandbox can reach.
func loadError(u string, err error) error {
	var le *chromedp.LoadError
	if !errors.As(err, &le) {
		return wrapf(err, "navigate to %s", u)
	}
	msg := fmt.Sprintf("navigate to %s: %s", u, le.ErrorText)
	switch le.ErrorText {
	case "net::ERR_CONNECTION_REFUSED":
		msg += ": nothing listens there inside the sandbox; start the server first (e.g. run_shell {command: \"python3 -m http.server 8000\", background: true})"
	case "net::ERR_NAME_NOT_RESOLVED", "net::ERR_INTERNET_DISCONNECTED", "net::ERR_ADDRESS_UNREACHABLE",
		"net::ERR_NETWORK_UNREACHABLE", "net::ERR_NETWORK_ACCESS_DENIED", "net::ERR_CONNECTION_TIMED_OUT", "net::ERR_PROXY_CONNECTION_FAILED":
		msg += ": the sandbox has no network; the browser reaches only servers inside the sandbox (127.0.0.1), file:// and data: URLs"
	case "net::ERR_FILE_NOT_FOUND":
		msg += ": no such file in the sandbox"
	}
	return failf("%s", msg)
}
