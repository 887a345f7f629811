package sandboxtest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sandgate/sandgate/sandbox"
)

// Local is a sandbox.Provider for tests that runs each sandbox's real
// runner binary as a plain subprocess serving a unix socket in a temp
// dir, with a plain directory as its workspace. Gateway logic that needs
// no container (scopes, audit, quotas, session binding, replacement of a
// dead runner, timeouts) is tested on it in seconds, without Docker.
//
// It isolates nothing: the runner and what it runs are processes of the
// test's own user on the host. Use it only for tests, with commands a
// test chooses. Limits other than the call timeout are not applied.
type Local struct {
	// CAFile, when set, is handed to every runner as --extra-ca, as the
	// Docker provider's Config.CAFile is.
	CAFile string

	runner string
	root   string
	images []string

	mu      sync.Mutex
	boxes   map[string]*localBox
	used    map[string]time.Time    // Touch
	network map[string][]string     // SetNetwork
	ends    map[string]time.Time    // SetDeadline
	claims  map[string]sandbox.Info // Claim: what a pooled sandbox is since
	lost    []*localBox             // Lose: runners without a record, stopped at cleanup
}

// localBox is one sandbox: its directory and its current runner process.
type localBox struct {
	info sandbox.Info
	dir  string
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
	// pausedAt is when Pause stopped its runner (zero: not paused);
	// info.ResumedAt is its last Resume.
	pausedAt  time.Time
	pausedFor string // the pause's reason
}

// LocalImage is the image name Local accepts by default.
const LocalImage = "sandgate/base:latest"

// localReadyTimeout bounds the wait for a runner to listen.
const localReadyTimeout = 30 * time.Second

var (
	_ sandbox.Provider    = (*Local)(nil)
	_ sandbox.Recorder    = (*Local)(nil)
	_ sandbox.Pauser      = (*Local)(nil)
	_ sandbox.Snapshotter = (*Local)(nil)
)

// NewLocal returns a Local that knows the given image names (LocalImage
// when none) and removes everything it made when t ends.
func NewLocal(t testing.TB, images ...string) *Local {
	t.Helper()
	if len(images) == 0 {
		images = []string{LocalImage}
	}
	// A short root: socket paths must stay under the unix limit.
	root, err := os.MkdirTemp("", "sgl")
	if err != nil {
		t.Fatal(err)
	}
	l := &Local{runner: RunnerBinary(t), root: root, images: images, boxes: map[string]*localBox{},
		used: map[string]time.Time{}, network: map[string][]string{}, ends: map[string]time.Time{}, claims: map[string]sandbox.Info{}}
	t.Cleanup(func() {
		for _, id := range l.ids() {
			_ = l.Remove(context.Background(), id)
		}
		for _, b := range l.lost {
			l.stop(b)
		}
		os.RemoveAll(root)
	})
	return l
}

// WorkspaceDurable reports true: a Local workspace is a directory that
// outlives its runner, as a disk workspace outlives its container.
func (l *Local) WorkspaceDurable() bool { return true }

// Create starts a runner for spec and returns once it listens.
func (l *Local) Create(ctx context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	if spec.Image == "" {
		spec.Image = l.images[0]
	}
	if !slices.Contains(l.images, spec.Image) {
		return nil, fmt.Errorf("%w: local provider knows images %v, not %s", sandbox.ErrImageMissing, l.images, spec.Image)
	}
	if spec.ID == "" {
		spec.ID = randomHex(16)
	}
	dir := filepath.Join(l.root, spec.ID)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create sandbox %s: %w", spec.ID, err)
	}
	if spec.Snapshot != "" {
		if err := copyTree(l.snapshotDir(spec.Snapshot), filepath.Join(dir, "workspace")); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("create sandbox %s from snapshot %s: %w", spec.ID, spec.Snapshot, err)
		}
	} else if err := os.MkdirAll(filepath.Join(dir, "workspace"), 0o755); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	// The record exists while the runner starts, as a container's or a
	// pod's does (State "starting"; Get does not find it yet), so that
	// gateway replicas see each other's creations in flight. CreatedAt
	// is taken under the lock: records are made in CreatedAt order.
	l.mu.Lock()
	now := time.Now().UTC()
	if spec.ExpiresAt.IsZero() {
		spec.ExpiresAt = now.Add(spec.Limits.WithDefaults().MaxLifetime)
	}
	info := sandbox.Info{ID: spec.ID, Image: spec.Image, Owner: spec.Owner, Session: spec.Session, Client: spec.Client, Tenant: spec.Tenant, Network: spec.Network, Pool: spec.Pool,
		CreatedAt: now, ExpiresAt: spec.ExpiresAt, State: "starting", WorkspaceDurable: true, Template: spec.Template, Metadata: maps.Clone(spec.Metadata), Lifecycle: spec.Lifecycle}
	starting := &localBox{dir: dir, info: info}
	l.boxes[spec.ID] = starting
	l.mu.Unlock()
	b := &localBox{dir: dir, info: info}
	err := l.start(ctx, b)
	l.mu.Lock()
	removed := l.boxes[spec.ID] != starting
	if err == nil && !removed {
		l.boxes[spec.ID] = b
	} else if !removed {
		delete(l.boxes, spec.ID)
	}
	l.mu.Unlock()
	if err == nil && removed {
		l.stop(b)
		err = sandbox.ErrNotFound // removed while it started
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("create sandbox %s: %w", spec.ID, err)
	}
	return &localHandle{l: l, info: b.info, sock: b.sock()}, nil
}

// Recreate kills the sandbox's runner, if it still runs, and starts a new
// one on the same workspace.
func (l *Local) Recreate(ctx context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	b := l.box(spec.ID)
	if b == nil || b.cmd == nil {
		return nil, fmt.Errorf("recreate sandbox %s: %w", spec.ID, sandbox.ErrNotFound)
	}
	l.stop(b)
	fresh := &localBox{dir: b.dir, info: b.info}
	if err := l.start(ctx, fresh); err != nil {
		return nil, fmt.Errorf("recreate sandbox %s: %w", spec.ID, err)
	}
	l.mu.Lock()
	l.boxes[spec.ID] = fresh
	l.network[spec.ID] = slices.Clone(spec.Network) // as a new record would say
	l.mu.Unlock()
	return &localHandle{l: l, info: l.record(spec.ID, fresh.info), sock: fresh.sock()}, nil
}

// Get returns the sandbox if its runner is running.
func (l *Local) Get(_ context.Context, id string) (sandbox.Sandbox, error) {
	b := l.box(id)
	if b == nil || b.cmd == nil || b.exited() {
		return nil, fmt.Errorf("get sandbox %s: %w", id, sandbox.ErrNotFound)
	}
	return &localHandle{l: l, info: l.record(id, b.info), sock: b.sock()}, nil
}

// List describes the sandboxes that match filter, oldest first.
func (l *Local) List(_ context.Context, f sandbox.Filter) ([]sandbox.Info, error) {
	var out []sandbox.Info
	for _, id := range l.ids() {
		b := l.box(id)
		if b == nil {
			continue
		}
		info := l.record(id, b.info)
		if !f.Matches(info) {
			continue
		}
		switch {
		case !b.pausedAt.IsZero():
			info.State, info.PausedAt, info.PausedFor = sandbox.StatePaused, b.pausedAt, b.pausedFor
		case b.exited():
			info.State = "exited"
		}
		info.DiskBytes = diskBytes(filepath.Join(b.dir, "workspace"))
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b sandbox.Info) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// Pause stops sandbox id's runner and keeps its directory, as Docker
// stops a container and keeps its workspace.
func (l *Local) Pause(_ context.Context, id, reason string) error {
	b := l.box(id)
	if b == nil {
		return fmt.Errorf("pause sandbox %s: %w", id, sandbox.ErrNotFound)
	}
	l.mu.Lock()
	if !b.pausedAt.IsZero() {
		l.mu.Unlock()
		return nil
	}
	b.pausedAt, b.pausedFor = time.Now().UTC(), sandbox.PauseReason(reason)
	l.mu.Unlock()
	l.stop(b)
	return nil
}

// Resume starts a new runner for paused sandbox id on its directory.
func (l *Local) Resume(ctx context.Context, id string) (sandbox.Sandbox, error) {
	b := l.box(id)
	if b == nil {
		return nil, fmt.Errorf("resume sandbox %s: %w", id, sandbox.ErrNotFound)
	}
	l.mu.Lock()
	paused := !b.pausedAt.IsZero()
	l.mu.Unlock()
	if !paused {
		if b.cmd != nil && !b.exited() {
			return l.Get(ctx, id)
		}
		return nil, fmt.Errorf("resume sandbox %s: its runner exited: %w", id, sandbox.ErrNotPaused)
	}
	fresh := &localBox{dir: b.dir, info: b.info}
	fresh.info.ResumedAt = time.Now().UTC()
	if err := l.start(ctx, fresh); err != nil {
		return nil, fmt.Errorf("resume sandbox %s: %w", id, err)
	}
	l.mu.Lock()
	if l.boxes[id] != b { // removed while it started
		l.mu.Unlock()
		l.stop(fresh)
		return nil, fmt.Errorf("resume sandbox %s: %w", id, sandbox.ErrNotFound)
	}
	l.boxes[id] = fresh
	l.mu.Unlock()
	return &localHandle{l: l, info: l.record(id, fresh.info), sock: fresh.sock()}, nil
}

// Snapshot copies sandbox id's workspace directory (not atomically: the
// test provider freezes nothing).
func (l *Local) Snapshot(_ context.Context, id, snap string) (int64, error) {
	b := l.box(id)
	if b == nil {
		return 0, fmt.Errorf("snapshot sandbox %s: %w", id, sandbox.ErrNotFound)
	}
	if strings.ContainsAny(snap, "/.") || snap == "" {
		return 0, fmt.Errorf("snapshot %q: not an id", snap)
	}
	dst := l.snapshotDir(snap)
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return 0, err
	}
	if _, err := os.Lstat(dst); err == nil {
		return 0, fmt.Errorf("snapshot %s exists", snap)
	}
	if err := copyTree(filepath.Join(b.dir, "workspace"), dst); err != nil {
		os.RemoveAll(dst)
		return 0, fmt.Errorf("snapshot sandbox %s: %w", id, err)
	}
	return diskBytes(dst), nil
}

// DeleteSnapshot removes snapshot snap's copy.
func (l *Local) DeleteSnapshot(_ context.Context, snap string) error {
	dst := l.snapshotDir(snap)
	if _, err := os.Lstat(dst); err != nil || strings.ContainsAny(snap, "/.") || snap == "" {
		return fmt.Errorf("delete snapshot %s: %w", snap, sandbox.ErrNoSnapshot)
	}
	return os.RemoveAll(dst)
}

func (l *Local) snapshotDir(snap string) string { return filepath.Join(l.root, "_snapshots", snap) }

// copyTree copies directory src to dst (which must not exist), modes
// and symlinks kept.
func copyTree(src, dst string) error {
	if _, err := os.Lstat(src); err != nil {
		return fmt.Errorf("%w: %w", sandbox.ErrNoSnapshot, err)
	}
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		return fmt.Errorf("cp -a: %v: %s", err, out)
	}
	return nil
}

// diskBytes is the disk the files under dir have allocated.
func diskBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				n += st.Blocks * 512
			}
		}
		return nil
	})
	return n
}

// record returns info with what was recorded for sandbox id since it
// was created (Claim, Touch, SetNetwork, SetDeadline).
func (l *Local) record(id string, info sandbox.Info) sandbox.Info {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c, ok := l.claims[id]; ok {
		info = c
	}
	info.LastUsed, info.Deadline = l.used[id], l.ends[id]
	if n, ok := l.network[id]; ok {
		info.Network = n
	}
	return info
}

// Touch implements sandbox.Recorder, in memory: several gateways on one
// Local share its records as replicas share a cluster's.
func (l *Local) Touch(_ context.Context, id string, at time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.boxes[id] == nil {
		return fmt.Errorf("touch sandbox %s: %w", id, sandbox.ErrNotFound)
	}
	l.used[id] = at.UTC()
	return nil
}

// SetNetwork implements sandbox.Recorder.
func (l *Local) SetNetwork(_ context.Context, id string, rules []string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.boxes[id] == nil {
		return fmt.Errorf("set network of sandbox %s: %w", id, sandbox.ErrNotFound)
	}
	l.network[id] = slices.Clone(rules)
	return nil
}

// SetDeadline implements sandbox.Recorder.
func (l *Local) SetDeadline(_ context.Context, id string, at time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.boxes[id] == nil {
		return fmt.Errorf("set deadline of sandbox %s: %w", id, sandbox.ErrNotFound)
	}
	if at.IsZero() {
		delete(l.ends, id)
	} else {
		l.ends[id] = at.UTC()
	}
	return nil
}

// Claim implements sandbox.PoolClaims, in memory and under one lock, so
// that replicas on one Local claim as they would on a cluster.
func (l *Local) Claim(_ context.Context, id string, spec sandbox.Spec) (sandbox.Info, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.boxes[id]
	switch _, taken := l.claims[id]; {
	case b == nil:
		return sandbox.Info{}, fmt.Errorf("claim sandbox %s: %w", id, sandbox.ErrNotFound)
	case taken || b.info.Pool == "" || b.info.Pool != spec.Pool || b.info.Owner != "":
		return sandbox.Info{}, fmt.Errorf("claim sandbox %s: %w", id, sandbox.ErrClaimed)
	}
	info := b.info
	info.Owner, info.Session, info.Client, info.Tenant, info.Network = spec.Owner, spec.Session, spec.Client, spec.Tenant, spec.Network
	info.ExpiresAt, info.CreatedAt, info.Template, info.Metadata, info.Lifecycle = spec.ExpiresAt, time.Now(), spec.Template, spec.Metadata, spec.Lifecycle
	l.claims[id] = info
	return info, nil
}

// RemoveUnclaimed implements sandbox.PoolClaims: the check and the
// removal from the records are one step under the lock.
func (l *Local) RemoveUnclaimed(_ context.Context, id string) error {
	l.mu.Lock()
	b := l.boxes[id]
	if _, taken := l.claims[id]; b != nil && (taken || b.info.Pool == "") {
		l.mu.Unlock()
		return fmt.Errorf("remove pooled sandbox %s: %w", id, sandbox.ErrClaimed)
	}
	l.forgetLocked(id)
	l.mu.Unlock()
	return l.finishRemove(id, b)
}

// Remove stops the runner (and, through its shutdown, what it started)
// and deletes the sandbox's directory.
func (l *Local) Remove(_ context.Context, id string) error {
	l.mu.Lock()
	b := l.boxes[id]
	l.forgetLocked(id)
	l.mu.Unlock()
	return l.finishRemove(id, b)
}

// forgetLocked drops sandbox id's records; l.mu must be held.
func (l *Local) forgetLocked(id string) {
	delete(l.claims, id)
	delete(l.boxes, id)
	delete(l.used, id)
	delete(l.network, id)
	delete(l.ends, id)
}

// finishRemove stops b, sandbox id's box taken out of the records, and
// deletes its directory.
func (l *Local) finishRemove(id string, b *localBox) error {
	if b == nil {
		return fmt.Errorf("remove sandbox %s: %w", id, sandbox.ErrNotFound)
	}
	l.stop(b)
	return os.RemoveAll(b.dir)
}

// Lose drops sandbox id's record while its runner, stopped (SIGSTOP),
// keeps its connections open: as when another replica deletes a
// Kubernetes sandbox and the pod's network goes before any connection to
// its runner closes, so that a gateway learns of it only from its
// heartbeat. The runner is stopped for good when the test ends.
func (l *Local) Lose(id string) error {
	if err := l.Stop(id); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lost = append(l.lost, l.boxes[id])
	l.forgetLocked(id)
	return nil
}

// Kill SIGKILLs the sandbox's runner, as when its container dies.
func (l *Local) Kill(id string) error { return l.signal(id, syscall.SIGKILL) }

// Stop SIGSTOPs the sandbox's runner, as sandbox code can, and returns
// once every thread of it has stopped: on a busy machine a group stop
// takes effect only when the kernel gets to run each thread, and until
// then the runner can still answer. Cont resumes it.
func (l *Local) Stop(id string) error {
	if err := l.signal(id, syscall.SIGSTOP); err != nil {
		return err
	}
	return WaitStopped(l.box(id).cmd.Process.Pid)
}

// WaitStopped returns once every thread of process pid is stopped
// (SIGSTOP), or an error after a minute.
func WaitStopped(pid int) error {
	for deadline := time.Now().Add(time.Minute); !allStopped(pid); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("process %d not stopped after a minute", pid)
		}
	}
	return nil
}

// allStopped reports whether every thread of pid is in the stopped state.
func allStopped(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		// The state follows the command name, which is in parentheses.
		i := strings.LastIndexByte(string(b), ')')
		if err != nil || i < 0 || i+2 >= len(b) || b[i+2] != 'T' {
			return false
		}
	}
	return true
}

// Cont resumes a runner stopped with Stop.
func (l *Local) Cont(id string) error { return l.signal(id, syscall.SIGCONT) }

// Workspace is the host directory of the sandbox's workspace.
func (l *Local) Workspace(id string) string { return filepath.Join(l.root, id, "workspace") }

func (l *Local) signal(id string, sig syscall.Signal) error {
	b := l.box(id)
	if b == nil || b.cmd == nil {
		return fmt.Errorf("signal sandbox %s: %w", id, sandbox.ErrNotFound)
	}
	return b.cmd.Process.Signal(sig)
}

// start runs a runner for b and waits until it listens, or fails.
func (l *Local) start(ctx context.Context, b *localBox) error {
	ws := filepath.Join(b.dir, "workspace")
	tmp := filepath.Join(b.dir, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return err
	}
	_ = os.Remove(b.sock())
	// Port 0: several local runners share the host's loopback.
	args := []string{"--socket", b.sock(), "--workspace", ws, "--proxy-listen", "127.0.0.1:0"}
	if l.CAFile != "" {
		args = append(args, "--extra-ca", l.CAFile)
	}
	b.cmd = exec.Command(l.runner, args...)
	b.cmd.Dir = ws
	// Nothing from the test's environment, as nothing from the host's
	// enters a real sandbox.
	b.cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + ws, "LANG=C.UTF-8", "TMPDIR=" + tmp}
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	b.done = make(chan struct{})
	if err := b.cmd.Start(); err != nil {
		return fmt.Errorf("%w: start runner: %v", sandbox.ErrStartFailed, err)
	}
	go func() {
		_ = b.cmd.Wait()
		close(b.done)
	}()
	b.info.ContainerID = fmt.Sprintf("local-%d", b.cmd.Process.Pid)
	b.info.State = "running"
	deadline := time.NewTimer(localReadyTimeout)
	defer deadline.Stop()
	for {
		if conn, err := net.Dial("unix", b.sock()); err == nil {
			conn.Close()
			return nil
		}
		select {
		case <-b.done:
			return fmt.Errorf("%w: runner exited before listening", sandbox.ErrStartFailed)
		case <-ctx.Done():
			l.stop(b)
			return ctx.Err()
		case <-deadline.C:
			l.stop(b)
			return fmt.Errorf("%w: runner did not listen within %v", sandbox.ErrStartFailed, localReadyTimeout)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// stop ends b's runner: SIGTERM lets it kill what it started, SIGKILL
// follows if it does not exit (or is stopped).
func (l *Local) stop(b *localBox) {
	if b.cmd == nil || b.exited() {
		return
	}
	_ = b.cmd.Process.Signal(syscall.SIGCONT)
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
		<-b.done
	}
}

func (l *Local) box(id string) *localBox {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.boxes[id]
}

func (l *Local) ids() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	ids := make([]string, 0, len(l.boxes))
	for id := range l.boxes {
		ids = append(ids, id)
	}
	return ids
}

func (b *localBox) sock() string { return filepath.Join(b.dir, "runner.sock") }

func (b *localBox) exited() bool {
	select {
	case <-b.done:
		return true
	default:
		return false
	}
}

// localHandle is a sandbox.Sandbox of a Local.
type localHandle struct {
	l    *Local
	info sandbox.Info
	sock string
}

func (h *localHandle) ID() string         { return h.info.ID }
func (h *localHandle) Info() sandbox.Info { return h.info }

func (h *localHandle) Dial(ctx context.Context) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", h.sock)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) {
		return nil, fmt.Errorf("dial runner of sandbox %s: %w: %w", h.info.ID, sandbox.ErrNotFound, err)
	}
	return conn, err
}

func (h *localHandle) Destroy(ctx context.Context) error { return h.l.Remove(ctx, h.info.ID) }
