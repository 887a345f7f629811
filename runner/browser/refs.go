package browser

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/runtime"

	"github.com/sandgate/sandgate/runner/protocol"
)

// refTable is what the latest snapshot of a tab listed.
type refTable struct {
	doc  cdp.LoaderID // the document the snapshot was of
	refs map[string]bool
}

var refPattern = regexp.MustCompile(`^e[0-9]+$`)

// check says why ref cannot be used on the document doc, or returns nil.
// The isolated world still has the last word: it knows whether the
// element is still in the page.
func (r refTable) check(ref string, doc cdp.LoaderID) error {
	switch {
	case !refPattern.MatchString(ref):
		return invalidf("ref %q is not a ref from browser_snapshot (they look like e12); pass a CSS selector as selector instead", ref)
	case r.refs == nil:
		return notFoundf("ref %s: there is no snapshot of this tab yet; call browser_snapshot and use a ref from it", ref)
	case !r.refs[ref]:
		return notFoundf("ref %s is not in this tab's latest snapshot; take a new snapshot (browser_snapshot) and use its refs", ref)
	case r.doc != doc:
		return notFoundf("ref %s is stale: the page has navigated since the snapshot; take a new snapshot (browser_snapshot) and use its refs", ref)
	}
	return nil
}

// checkTarget validates an action on one element.
func checkTarget(req protocol.BrowserRequest) error {
	return checkRefOrSelector(req.Ref, req.Selector)
}

func checkRefOrSelector(ref, selector string) error {
	switch {
	case ref == "" && selector == "":
		return invalidf("give ref (from browser_snapshot) or selector (CSS, or XPath starting with / or xpath=)")
	case ref != "" && selector != "":
		return invalidf("give ref or selector, not both")
	}
	return nil
}

// describeTarget names a ref or selector in messages.
func describeTarget(ref, selector string) string {
	if ref != "" {
		return ref
	}
	return fmt.Sprintf("selector %q", selector)
}

// selectorWait is how long a selector is given to match: the page may
// still be rendering what the caller saw in a snapshot.
const selectorWait = 5 * time.Second

// element resolves a ref or a selector to a handle on the element in the
// isolated world.
func (s *session) element(ref, selector string) (runtime.RemoteObjectID, error) {
	if ref != "" {
		_, doc, err := s.world()
		if err != nil {
			return "", err
		}
		if err := s.t.refs.check(ref, doc); err != nil {
			return "", err
		}
		r, err := s.js("resolve", false, ref)
		if err != nil {
			return "", wrapf(err, "find ref %s", ref)
		}
		switch {
		case r.Type == runtime.RemoteObjectTypeObject && r.ObjectID != "":
			return r.ObjectID, nil
		case string(r.Value) == `"detached"`:
			return "", notFoundf("ref %s is stale: the element was removed from the page since the snapshot; take a new snapshot (browser_snapshot)", ref)
		}
		return "", notFoundf("ref %s is stale: the page's document was replaced since the snapshot; take a new snapshot (browser_snapshot)", ref)
	}
	wait, cancel := context.WithTimeout(s.ctx, selectorWait)
	defer cancel()
	for {
		r, err := s.js("query", false, selector)
		switch {
		case err != nil && strings.Contains(err.Error(), "not a valid"):
			return "", invalidf("selector %q is not valid: %v", selector, err)
		case err == nil && r.Type == runtime.RemoteObjectTypeObject && r.ObjectID != "":
			return r.ObjectID, nil
		}
		select {
		case <-wait.Done():
			if s.ctx.Err() != nil {
				return "", s.ctx.Err()
			}
			return "", notFoundf("no element matches selector %q (waited %v); look at the page with browser_snapshot", selector, selectorWait)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// jsError is the {error: ...} some page-side functions return.
type jsError struct {
	Error string `json:"error"`
	What  string `json:"what"`
	By    string `json:"by"`
}

// pointAt scrolls the element into view and returns the point a pointer
// goes to. forClick also refuses a disabled or covered element.
func (s *session) pointAt(el runtime.RemoteObjectID, what string, forClick bool) (float64, float64, error) {
	var p struct {
		jsError
		X, Y float64
	}
	if err := s.callOn(el, &p, "point", forClick); err != nil {
		return 0, 0, wrapf(err, "locate %s", what)
	}
	switch p.Error {
	case "":
		return p.X, p.Y, nil
	case "hidden":
		return 0, 0, failf("%s (%s) is not visible: it has no size or CSS hides it", what, p.What)
	case "disabled":
		return 0, 0, failf("%s (%s) is disabled", what, p.What)
	case "covered":
		return 0, 0, failf("%s (%s) is covered by %s, which would get the click; close or move that first (a dialog, banner or overlay?)", what, p.What, p.By)
	}
	return 0, 0, failf("%s: %s", what, p.Error)
}

// refsOf collects the refs of a snapshot's nodes.
func refsOf(nodes []snapNode, into map[string]bool) map[string]bool {
	for _, n := range nodes {
		if n.Ref != "" {
			into[n.Ref] = true
		}
		refsOf(n.Children, into)
	}
	return into
}
