package browser

import (
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"

	"github.com/chromedp/cdproto/fetch"

	"github.com/sandgate/sandgate/runner/protocol"
)

// netState is the browser's network state that outlives one Chromium: the
// routes and the recording apply to every tab, and to the next browser
// when this one dies. Events reach it on chromedp's reading goroutines,
// so it has its own lock, and nothing under the lock talks to Chromium.
type netState struct {
	log *slog.Logger

	mu     sync.Mutex
	routes []*route // in the order added; the newest match wins
	nextID int
	rec    *recorder // nil when not recording
}

func newNetState(log *slog.Logger) *netState { return &netState{log: log, nextID: 1} }

// add appends r, within the bound on routes.
func (n *netState) add(r *route) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.routes) >= protocol.MaxRoutes {
		return "", invalidf("there are already %d routes, the most a browser takes; remove some (browser_route {action: remove} or clear)", protocol.MaxRoutes)
	}
	r.ID = "r" + strconv.Itoa(n.nextID)
	n.nextID++
	n.routes = append(n.routes, r)
	what := "fulfils them with status " + strconv.Itoa(r.Status)
	if r.Block {
		what = "blocks them"
	}
	return fmt.Sprintf("added route %s: matches %s and %s", r.ID, r.Pattern, what), nil
}

func (n *netState) remove(id string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	i := slices.IndexFunc(n.routes, func(r *route) bool { return r.ID == id })
	if i < 0 {
		return false
	}
	n.routes = slices.Delete(n.routes, i, i+1)
	return true
}

func (n *netState) clear() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	k := len(n.routes)
	n.routes = nil
	return k
}

// list returns the routes without their bodies, oldest first.
func (n *netState) list() []protocol.Route {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]protocol.Route, 0, len(n.routes))
	for _, r := range n.routes {
		c := r.Route
		c.Body = nil
		out = append(out, c)
	}
	return out
}

// match returns the newest route whose pattern matches url, counting the
// hit.
func (n *netState) match(url string) (protocol.Route, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for i := len(n.routes) - 1; i >= 0; i-- {
		if r := n.routes[i]; r.re.MatchString(url) {
			r.Hits++
			return r.Route, true
		}
	}
	return protocol.Route{}, false
}

// patterns are the Fetch.enable patterns of the current routes.
func (n *netState) patterns() []*fetch.RequestPattern {
	n.mu.Lock()
	defer n.mu.Unlock()
	return fetchPatterns(n.routes)
}

// onEvent follows one event of t for the routes and the recording. It
// runs on chromedp's reading goroutine and must not block.
func (n *netState) onEvent(t *tab, ev any) {
	if e, ok := ev.(*fetch.EventRequestPaused); ok {
		go n.answer(t, e)
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.rec != nil {
		n.rec.event(string(t.id), ev)
	}
}
