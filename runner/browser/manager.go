package browser

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sandgate/sandgate/runner/protocol"
)

// DefaultTimeout bounds an action whose request carries no TimeoutMs.
const DefaultTimeout = 30 * time.Second

// Options configure a Manager.
type Options struct {
	// ExecPath is the Chromium binary (see Find).
	ExecPath string
	// Trampoline is the runner's own binary, through which Chromium is
	// started so that it runs as user code does (process.ExecAsUser);
	// empty starts it directly.
	Trampoline string
	// Workspace is the base of relative paths (pdf).
	Workspace string
	// TempDir holds the browser's profile and home; default os.TempDir().
	TempDir string
	// Proxy is the sandbox's egress proxy (host:port); Chromium sends
	// every request through it. Empty leaves Chromium without a proxy,
	// which in a sandbox means without a network.
	Proxy string
	// TrustCAs are CAs Chromium trusts besides its own roots (the
	// operator's extra CAs); see trust.go.
	TrustCAs []*x509.Certificate
	Logger   *slog.Logger
}

// Manager runs browser actions on one lazily started Chromium. Actions
// run one at a time: they share the browser's tabs and current page.
type Manager struct {
	opts Options
	log  *slog.Logger
	turn chan struct{} // holds one token; an action takes it

	mu     sync.Mutex
	inst   *instance // nil before the first action, after Close, or once it died and was stopped
	closed bool

	// Owned by the action holding turn.
	nextRef  int  // first ref number of the next snapshot
	view     view // emulation applied to every tab
	restarts int

	net *netState // routes and the recording; locked on its own
}

// New returns a Manager; Chromium starts on the first action.
func New(opts Options) *Manager {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.TempDir == "" {
		opts.TempDir = os.TempDir()
	}
	m := &Manager{opts: opts, log: opts.Logger, turn: make(chan struct{}, 1), nextRef: 1, view: devices["desktop"], net: newNetState(opts.Logger)}
	m.turn <- struct{}{}
	return m
}

// action is one BrowserRequest.Action: check validates the request
// before any browser is started, run performs it on the current tab.
type action struct {
	check func(req protocol.BrowserRequest) error
	run   func(s *session, req protocol.BrowserRequest) (protocol.BrowserResult, error)
}

var actions = map[string]action{
	protocol.BrowserNavigate:     {checkNavigate, runNavigate},
	protocol.BrowserBack:         {nil, runBack},
	protocol.BrowserSnapshot:     {nil, runSnapshot},
	protocol.BrowserClick:        {checkTarget, runClick},
	protocol.BrowserHover:        {checkTarget, runHover},
	protocol.BrowserType:         {checkTarget, runType},
	protocol.BrowserFillForm:     {checkFillForm, runFillForm},
	protocol.BrowserSelectOption: {checkSelectOption, runSelectOption},
	protocol.BrowserPressKey:     {checkPressKey, runPressKey},
	protocol.BrowserWaitFor:      {checkWaitFor, runWaitFor},
	protocol.BrowserScreenshot:   {checkScreenshot, runScreenshot},
	protocol.BrowserEvaluate:     {checkEvaluate, runEvaluate},
	protocol.BrowserConsole:      {nil, runConsole},
	protocol.BrowserTabs:         {checkTabs, runTabs},
	protocol.BrowserResize:       {checkResize, runResize},
	protocol.BrowserPDF:          {checkPDF, runPDF},
	protocol.BrowserRoute:        {checkRoute, runRoute},
	protocol.BrowserRecord:       {checkRecord, runRecord},
}

// survivesCrash are the actions that work on a tab whose page crashed.
var survivesCrash = map[string]bool{
	protocol.BrowserNavigate: true, protocol.BrowserTabs: true, protocol.BrowserConsole: true, protocol.BrowserResize: true,
	protocol.BrowserRoute: true, protocol.BrowserRecord: true,
}

func actionNames() string {
	names := make([]string, 0, len(actions))
	for n := range actions {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// Do performs one browser action.
func (m *Manager) Do(ctx context.Context, req protocol.BrowserRequest) (protocol.BrowserResult, error) {
	var res protocol.BrowserResult
	act, ok := actions[req.Action]
	if !ok {
		return res, invalidf("unknown browser action %q; known: %s", req.Action, actionNames())
	}
	if act.check != nil {
		if err := act.check(req); err != nil {
			return res, err
		}
	}
	timeout := DefaultTimeout
	if req.TimeoutMs > 0 {
		timeout = time.Duration(req.TimeoutMs) * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	select {
	case <-m.turn:
		defer func() { m.turn <- struct{}{} }()
	case <-ctx.Done():
		return res, failf("another browser action is still running and did not finish within %v; try again when it has", timeout)
	}
	in, note, err := m.ensure(ctx)
	if err != nil {
		return res, m.explain(ctx, nil, err, timeout)
	}
	s, err := in.session(ctx, m)
	if err == nil {
		if s.t.crashed.Load() && !survivesCrash[req.Action] {
			err = failf("the page in this tab crashed (out of memory?); load it again with browser_navigate, or close the tab with browser_tabs")
		} else {
			res, err = act.run(s, req)
		}
		s.end()
	}
	if err != nil {
		err = m.explain(ctx, in, err, timeout)
		if note != "" {
			err = &protocol.Error{Code: protocol.CodeOf(err), Message: note + " " + err.Error()}
		}
		return protocol.BrowserResult{}, err
	}
	res.Message = joinMessages(note, res.Message)
	return res, nil
}

// ensure returns the running browser, starting one when there is none or
// the last one died; note then says what happened, for the result.
func (m *Manager) ensure(ctx context.Context) (*instance, string, error) {
	m.mu.Lock()
	in, closed := m.inst, m.closed
	m.mu.Unlock()
	if closed {
		return nil, "", &protocol.Error{Code: protocol.CodeUnavailable, Message: "the runner is shutting down"}
	}
	note := ""
	if in != nil {
		if in.alive(ctx) {
			return in, "", nil
		}
		m.log.Warn("browser died; starting a new one", "pid", in.pid, "error", in.exitReason())
		note = fmt.Sprintf("Chromium had exited since the last browser call (%s); started a new one, so earlier tabs, page state and refs are gone.", in.exitReason())
		in.stop()
		m.restarts++ // refs go on from m.nextRef, so old ones never match new elements
	}
	began := time.Now()
	in, err := start(ctx, m.opts, m.log)
	if err != nil {
		return nil, "", err
	}
	in.net = m.net
	m.log.Info("browser started", "pid", in.pid, "duration_ms", time.Since(began).Milliseconds(), "restarts", m.restarts)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		go in.stop()
		return nil, "", &protocol.Error{Code: protocol.CodeUnavailable, Message: "the runner is shutting down"}
	}
	m.inst = in
	return in, note, nil
}

// Close kills the browser, if one runs, and refuses later actions.
func (m *Manager) Close() error {
	m.mu.Lock()
	in := m.inst
	m.inst, m.closed = nil, true
	m.mu.Unlock()
	if in != nil {
		in.stop()
	}
	return nil
}

// explain turns what went wrong in an action into an error a user can act
// on: a timeout says how long and whether the page still answers, a lost
// browser says the next call starts a new one.
func (m *Manager) explain(ctx context.Context, in *instance, err error, timeout time.Duration) error {
	var pe *protocol.Error
	switch {
	case in != nil && in.dead():
		return failf("Chromium exited during the action (%s: crashed, killed or out of memory); the next browser call starts a new one", in.exitReason())
	case errors.As(err, &pe):
		return pe // said on purpose, e.g. "text did not appear within"
	case errors.Is(err, context.DeadlineExceeded) || pastDeadline(ctx):
		msg := fmt.Sprintf("the browser action did not finish within %v", timeout)
		if in != nil && !in.pageAnswers() {
			msg += fmt.Sprintf("; the page in tab %d does not respond (a script may be stuck in a loop): close it with browser_tabs {action: close, index: %d}", in.cur, in.cur)
		}
		return failf("%s", msg)
	case errors.Is(err, context.Canceled):
		return &protocol.Error{Code: protocol.CodeCanceled, Message: "canceled"}
	}
	return err // the runner classifies file system errors
}

func joinMessages(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, " ")
}

// pastDeadline reports whether ctx's deadline has passed. An action's
// own contexts carry the same deadline and may see it first, so ctx.Err
// alone can still be nil when an action fails for lack of time.
func pastDeadline(ctx context.Context) bool {
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}
