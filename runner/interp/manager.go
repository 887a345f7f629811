package interp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/sandgate/sandgate/runner/cgroup"
	"github.com/sandgate/sandgate/runner/process"
	"github.com/sandgate/sandgate/runner/protocol"
)

// ErrNoPython is returned by New when the image has no python3.
var ErrNoPython = errors.New("python3 not found")

// Defaults.
const (
	defaultWorkspace    = "/workspace"
	defaultTimeout      = 60 * time.Second // the runner's default call timeout
	defaultGrace        = 3 * time.Second
	defaultStartTimeout = 20 * time.Second
	closeWait           = 10 * time.Second
)

// Options configures a Manager. Zero values take the documented defaults.
type Options struct {
	Workspace string // working directory of the interpreter; default "/workspace"
	// BaseEnv is the interpreter's environment ("K=V"); nil means PATH,
	// HOME=Workspace and LANG=C.UTF-8, as for runner/process. The
	// Manager adds PYTHONUNBUFFERED, MPLBACKEND=Agg and MPLCONFIGDIR.
	BaseEnv []string
	// Python is the interpreter to run; default python3 from PATH.
	Python string
	// DefaultTimeout is a cell's timeout when its request gives none (the
	// gateway always gives one); default 60s. A requested timeout is
	// applied as asked: the gateway's limit is the only cap.
	DefaultTimeout time.Duration
	// Grace is how long a timed-out cell has to stop after its interrupt
	// before the interpreter is killed; default 3s.
	Grace time.Duration
	// StartTimeout bounds the start of an interpreter; default 20s.
	StartTimeout time.Duration
	// Accounting, when not nil, tells an interpreter that was killed for
	// memory from one that died otherwise.
	Accounting *cgroup.Accounting
	Logger     *slog.Logger
}

// Manager is the sandbox's stateful Python interpreter: one long-lived
// python3 running the embedded driver, started on first use, replaced
// when it dies, is killed after ignoring a timeout's interrupt, or is
// restarted. It implements runner.Interpreter.
//
// Cells run one at a time: a call waits for its turn, bounded by its own
// timeout. Who ends what: a cell ends when the driver answers; its
// timeout or its ctx interrupts it (SIGINT) and, after Grace, kills the
// interpreter; Close kills the interpreter at once.
type Manager struct {
	opts   Options
	python string
	log    *slog.Logger

	// ctx is cancelled by Close; a running cell watches it.
	ctx    context.Context
	cancel context.CancelFunc
	once   sync.Once

	// turn has one slot; its holder alone uses the fields below.
	turn chan struct{}
	ip   *interp // nil until the first call and after a death
	// gone says why the previous interpreter died, for the next call to
	// report; empty when there is nothing to report.
	gone   string
	mplDir string
}

// New returns a Manager; no interpreter starts until the first call. It
// returns an error wrapping ErrNoPython when python3 cannot be found.
func New(opts Options) (*Manager, error) {
	if opts.Workspace == "" {
		opts.Workspace = defaultWorkspace
	}
	if opts.BaseEnv == nil {
		opts.BaseEnv = process.DefaultEnv(opts.Workspace)
	}
	if opts.DefaultTimeout <= 0 {
		opts.DefaultTimeout = defaultTimeout
	}
	if opts.Grace <= 0 {
		opts.Grace = defaultGrace
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = defaultStartTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	name := opts.Python
	if name == "" {
		name = "python3"
	}
	python, err := exec.LookPath(name)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoPython, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Manager{opts: opts, python: python, log: opts.Logger, ctx: ctx, cancel: cancel, turn: make(chan struct{}, 1)}, nil
}

var errBusy = errors.New("another cell is running")

// acquire waits for the turn until deadline. It returns errBusy when the
// deadline passes first.
func (m *Manager) acquire(ctx context.Context, deadline time.Time) error {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case m.turn <- struct{}{}:
	case <-t.C:
		return errBusy
	case <-ctx.Done():
		return protocol.Errorf(protocol.CodeCanceled, "canceled while waiting for the interpreter")
	case <-m.ctx.Done():
		return errClosed()
	}
	if m.ctx.Err() != nil { // Close won the race for the turn
		m.release()
		return errClosed()
	}
	return nil
}

func (m *Manager) release() { <-m.turn }

func errClosed() error {
	return protocol.Errorf(protocol.CodeUnavailable, "the runner is shutting down")
}

// Close kills the interpreter. A running cell is ended at once; later
// calls fail with CodeUnavailable.
func (m *Manager) Close() {
	m.once.Do(func() {
		m.cancel()
		select {
		case m.turn <- struct{}{}: // held for good
		case <-time.After(closeWait):
			m.log.Warn("interpreter still busy at close", "waited", closeWait)
			return
		}
		if m.ip != nil {
			m.ip.kill(m)
			m.ip.release()
			m.ip = nil
		}
		if m.mplDir != "" {
			os.RemoveAll(m.mplDir)
		}
	})
}

// Restart replaces the interpreter with a fresh one, waiting for a
// running cell to end first (bounded by the default timeout and ctx).
func (m *Manager) Restart(ctx context.Context, req protocol.InterpRestartRequest) (protocol.InterpResult, error) {
	if err := checkLanguage(req.Language); err != nil {
		return protocol.InterpResult{}, err
	}
	began := time.Now()
	wait := m.opts.DefaultTimeout + m.opts.Grace
	if err := m.acquire(ctx, began.Add(wait)); errors.Is(err, errBusy) {
		return protocol.InterpResult{TimedOut: true, DurationMs: time.Since(began).Milliseconds(),
			Message: fmt.Sprintf("timed out after %s waiting for the running cell to end; the interpreter was not restarted", wait)}, nil
	} else if err != nil {
		return protocol.InterpResult{}, err
	}
	defer m.release()
	m.discard()
	m.gone = ""
	ip, err := m.start(ctx)
	if err != nil {
		return protocol.InterpResult{}, err
	}
	m.ip = ip
	return protocol.InterpResult{Restarted: true, DurationMs: time.Since(began).Milliseconds(),
		Message: "a new interpreter was started; earlier state is gone"}, nil
}

// ready returns the interpreter, starting one when there is none or the
// last one died; res says so when state was lost.
func (m *Manager) ready(ctx context.Context) (ip *interp, res protocol.InterpResult, err error) {
	if m.ip != nil && m.ip.hasExited() {
		m.gone = m.exitReason(m.ip)
		m.discard()
	}
	if m.ip == nil {
		if m.ip, err = m.start(ctx); err != nil {
			return nil, res, err
		}
		if m.gone != "" {
			res.Restarted = true
			res.Message = "the interpreter died (" + m.gone + "); a new one was started and earlier state is gone"
			m.gone = ""
		}
	}
	return m.ip, res, nil
}

// discard kills and forgets the interpreter, if any.
func (m *Manager) discard() {
	if m.ip != nil {
		m.ip.kill(m)
		m.ip.release()
		m.ip = nil
	}
}

// matplotlibDir returns the MPLCONFIGDIR every interpreter of m shares,
// so that matplotlib's font cache is built once, not after every restart.
func (m *Manager) matplotlibDir() (string, error) {
	if m.mplDir == "" {
		dir, err := os.MkdirTemp("", "sandgate-matplotlib-*")
		if err != nil {
			return "", fmt.Errorf("create matplotlib config dir: %w", err)
		}
		m.mplDir = dir
	}
	return m.mplDir, nil
}

// checkLanguage accepts python (by any of its names), the only stateful
// language.
func checkLanguage(lang string) error {
	l, err := protocol.ParseLanguage(lang)
	if err != nil {
		return err
	}
	if l != protocol.Python {
		return protocol.Errorf(protocol.CodeInvalid, "the stateful interpreter runs python only, not %s", l)
	}
	return nil
}

// timeout returns a cell's timeout: the request's, or the default.
func (m *Manager) timeout(ms int64) (time.Duration, error) {
	return process.Timeout(ms, m.opts.DefaultTimeout)
}
