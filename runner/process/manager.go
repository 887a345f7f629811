package process

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/sandgate/sandgate/runner/cgroup"
	"github.com/sandgate/sandgate/runner/protocol"
)

// Defaults and caps.
const (
	defaultWorkspace = "/workspace"
	defaultTimeout   = 60 * time.Second
	maxRunning       = 64  // background processes running at once
	maxTracked       = 256 // background processes remembered, running or exited
	closeWait        = 10 * time.Second
)

// Options configures a Manager. Zero values take the documented defaults.
type Options struct {
	Workspace string // default working directory; default "/workspace"
	// BaseEnv is the environment ("K=V") every process starts with; a
	// request's Env is merged over it. nil means PATH, HOME=Workspace and
	// LANG=C.UTF-8.
	BaseEnv []string
	// DefaultTimeout is the timeout of a Run whose request gives none
	// (the gateway always gives one); default 60s. A requested timeout is
	// applied as asked: the gateway's limit is the only cap. A background
	// process has none unless its request asks for one.
	DefaultTimeout time.Duration
	// Accounting, when not nil, reads the container's cgroup before and
	// after a call to detect OOM kills.
	Accounting *cgroup.Accounting
	Logger     *slog.Logger
}

// Manager runs commands for the runner: foreground calls (Run) and
// background processes (Start and the methods that act on them). Every
// process it starts leads its own session, and when a call ends the
// Manager kills the call's whole process tree (see tree).
//
// Who ends what: a Run ends when its root process exits, when its timeout
// fires or when its ctx is cancelled (the gateway's cancel or a dropped
// connection). A background process ends when it exits, when Signal kills
// it, when its own timeout (if any) fires, or at Close; never because the
// request that started it has finished. Close ends everything.
type Manager struct {
	opts Options
	log  *slog.Logger

	// ctx is cancelled by Close; every call and background process watches
	// it in addition to its own reasons to end.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // calls and background processes not yet cleaned up

	mu     sync.Mutex
	closed bool
	procs  map[string]*background
	order  []*background // oldest first, for eviction
}

// DefaultEnv is the environment user processes start with when the
// runner is given none: nothing from the runner's own environment.
func DefaultEnv(workspace string) []string {
	return []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=" + workspace,
		"LANG=C.UTF-8",
		// matplotlib would otherwise put its config and font cache in
		// HOME, the user's workspace.
		"MPLCONFIGDIR=/tmp/matplotlib",
	}
}

// NewManager returns a Manager. The first Manager of a process makes the
// process a child subreaper and starts the orphan reaper (see registry).
func NewManager(opts Options) *Manager {
	if opts.Workspace == "" {
		opts.Workspace = defaultWorkspace
	}
	if opts.BaseEnv == nil {
		opts.BaseEnv = DefaultEnv(opts.Workspace)
	}
	if opts.DefaultTimeout <= 0 {
		opts.DefaultTimeout = defaultTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	resetIgnoredSignals()
	reg.start(opts.Logger)
	ctx, cancel := context.WithCancel(context.Background())
	return &Manager{
		opts:   opts,
		log:    opts.Logger,
		ctx:    ctx,
		cancel: cancel,
		procs:  make(map[string]*background),
	}
}

// begin registers a call or background process with the Manager, or
// refuses it after Close. The caller must call m.wg.Done when the
// process tree is gone.
func (m *Manager) begin() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return protocol.Errorf(protocol.CodeUnavailable, "the runner is shutting down")
	}
	m.wg.Add(1)
	return nil
}

// Close kills every foreground call's and background process's tree and
// waits (up to 10s) until they are gone. Later calls fail with
// CodeUnavailable.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.cancel()
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(closeWait):
		m.log.Warn("process trees still being cleaned up at close", "waited", closeWait)
	}
}
