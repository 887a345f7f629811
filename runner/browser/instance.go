package browser

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/inspector"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/sandgate/sandgate/runner/protocol"
)

// instance is one running Chromium.
type instance struct {
	log       *slog.Logger
	pid       int
	home      string
	userAgent string // the browser's own, restored by the desktop preset
	net       *netState

	root        context.Context // chromedp context of the first tab; its end ends the browser
	cancelRoot  context.CancelFunc
	cancelAlloc context.CancelFunc
	exited      <-chan struct{}
	deathNote   atomic.Pointer[string] // why alive last said no
	stopOnce    sync.Once

	// Owned by the action holding the Manager's turn.
	tabs []*tab
	cur  int
}

// tab is one page target of the browser.
type tab struct {
	id target.ID
	// ctx is the chromedp context attached to the target: nil until
	// attached. Its first Run bound the target's event loop to it, so
	// it lives as long as the tab. cancel closes the target; it is nil
	// for the first tab, whose context owns the whole browser.
	ctx    context.Context
	cancel context.CancelFunc

	attached  bool
	mainFrame cdp.FrameID
	console   *consoleLog
	nav       *navState
	crashed   atomic.Bool
	fetchOn   bool // Fetch is enabled: the routes' requests pause

	// The isolated world of the current document and its refs.
	world    runtime.ExecutionContextID
	worldDoc cdp.LoaderID
	refs     refTable
}

// session is what an action works with: the browser, its current tab,
// and ctx, which carries the tab's chromedp values but ends with the
// action.
type session struct {
	m      *Manager
	in     *instance
	t      *tab
	call   context.Context
	ctx    context.Context
	cancel context.CancelFunc
}

func (in *instance) session(call context.Context, m *Manager) (*session, error) {
	s := &session{m: m, in: in, call: call, cancel: func() {}}
	if len(in.tabs) == 0 { // the pages closed every tab
		if _, err := in.openTab(call); err != nil {
			return nil, err
		}
		in.cur = 0
	}
	if err := s.use(in.tabs[in.cur]); err != nil {
		return nil, err
	}
	return s, nil
}

// use makes t the session's tab, attaching to it first if needed.
func (s *session) use(t *tab) error {
	if err := s.in.attach(s.call, s.m.view, t); err != nil {
		return err
	}
	s.cancel()
	s.t = t
	s.ctx, s.cancel = bound(t.ctx, s.call)
	return nil
}

func (s *session) end() { s.cancel() }

// bound returns a context that carries the chromedp values of from (its
// browser and tab) but ends when from or call ends, with call's deadline.
// Cancelling it never closes a tab: only chromedp.NewContext's cancel does.
func bound(from, call context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(from)
	cancelDeadline := context.CancelFunc(func() {})
	if d, ok := call.Deadline(); ok {
		ctx, cancelDeadline = context.WithDeadline(ctx, d)
	}
	stop := context.AfterFunc(call, cancel)
	return ctx, func() {
		stop()
		cancelDeadline()
		cancel()
	}
}

// runLong runs fn with long, whose life fn's first chromedp Run binds a
// browser or a target's event loop to, but waits only as long as wait.
func runLong(long, wait context.Context, fn func(context.Context) error) error {
	done := make(chan error, 1)
	go func() { done <- fn(long) }()
	select {
	case err := <-done:
		return err
	case <-wait.Done():
		return wait.Err()
	}
}

// attach connects to t's target (once) and starts recording its console,
// dialogs and navigations, then applies the emulated device.
func (in *instance) attach(call context.Context, v view, t *tab) error {
	if t.attached {
		return nil
	}
	if t.ctx == nil {
		t.ctx, t.cancel = chromedp.NewContext(in.root, chromedp.WithTargetID(t.id))
	}
	err := runLong(t.ctx, call, func(ctx context.Context) error {
		tree, err := chromedp.Call(ctx, page.GetFrameTree, cdp.Empty{})
		if err == nil {
			t.mainFrame = tree.FrameTree.Frame.ID
		}
		return err
	})
	if err != nil {
		if t.cancel != nil {
			t.cancel()
			t.ctx, t.cancel = nil, nil
		}
		return wrapf(err, "attach to tab %s", t.id)
	}
	t.console, t.nav = newConsoleLog(), newNavState()
	messages := chromedp.Console(t.ctx) // subscribes now; ranged below
	go t.console.collect(messages)
	if err := chromedp.Listen(t.ctx, func(ev any) { t.onEvent(in, ev) }); err != nil {
		return wrapf(err, "listen to tab %s", t.id)
	}
	t.attached = true
	ctx, cancel := bound(t.ctx, call)
	defer cancel()
	if err := v.apply(ctx, in.userAgent); err != nil {
		return err
	}
	return t.intercept(ctx, in.net.patterns())
}

// onEvent follows one event of t. It runs on chromedp's reading
// goroutine and must not block.
func (t *tab) onEvent(in *instance, ev any) {
	switch e := ev.(type) {
	case *page.EventFrameStartedLoading:
		if e.FrameID == t.mainFrame {
			t.nav.begin()
		}
	case *page.EventFrameStoppedLoading:
		if e.FrameID == t.mainFrame {
			t.nav.end()
		}
	case *page.EventJavascriptDialogOpening:
		// A dialog blocks the page until answered; nobody is there to
		// answer it, so it is accepted and noted in the console.
		t.console.add(protocol.ConsoleMessage{Level: "dialog", Text: string(e.Type) + ": " + e.Message + " (accepted)"})
		go t.answerDialog(e.DefaultPrompt)
	case *inspector.EventTargetCrashed:
		t.crashed.Store(true)
		t.nav.end()
	default:
		in.net.onEvent(t, ev)
	}
}

func (t *tab) answerDialog(prompt string) {
	ctx, cancel := context.WithTimeout(t.ctx, 5*time.Second)
	defer cancel()
	_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true, PromptText: prompt})
}

// pageAnswers reports whether the current tab's page still runs script.
func (in *instance) pageAnswers() bool {
	if in.cur >= len(in.tabs) || !in.tabs[in.cur].attached || in.dead() {
		return false
	}
	ctx, cancel := context.WithTimeout(in.tabs[in.cur].ctx, 2*time.Second)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Evaluate[int]("1"))
	return err == nil
}
