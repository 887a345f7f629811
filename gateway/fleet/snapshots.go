package fleet

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sandgate/sandgate/auth/identity"
	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/sandbox"
)

// Snapshots: immutable copies of a sandbox's workspace (the provider's,
// sandbox.Snapshotter) that new sandboxes start from, and forks, which
// are sandboxes made from a snapshot taken for them. The gateway keeps a
// record per snapshot (Config.SnapshotDir, one JSON file each): its
// tenant, which alone may use it, its name, what it was taken of and
// what it takes on disk, counted against the tenant's snapshot quota.
//
// A record is written, marked not ready, before the provider copies
// anything, and marked ready after: a crash in between leaves a record
// that is not ready, which the next start rolls back (the provider's
// copy, if any, is deleted with it). So a snapshot is either whole and
// recorded or gone, never half of one.

// ErrSnapshotQuota is a snapshot that would take its tenant past the
// snapshot quota.
var ErrSnapshotQuota = errors.New("snapshot quota reached")

// ErrCannotSnapshot is a snapshot asked of a gateway whose provider
// cannot take them.
var ErrCannotSnapshot = errors.New("this gateway cannot snapshot sandboxes (its provider cannot, or it runs as replicas, which do not yet); ask the operator for a single gateway on Docker")

// ErrBadSnapshotRequest is a snapshot name or fork count outside the
// rules, which the error states.
var ErrBadSnapshotRequest = errors.New("bad snapshot request")

// snapshotNamePattern bounds snapshot names: no path characters.
var snapshotNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// MaxForks bounds one sandbox_fork.
const MaxForks = 100

// SnapshotRecord is a snapshot as the gateway keeps it.
type SnapshotRecord struct {
	ID        string    `json:"snapshot_id"`
	Name      string    `json:"name"`
	Tenant    string    `json:"tenant"`
	Owner     string    `json:"owner"`      // digest of who took it
	SandboxID string    `json:"sandbox_id"` // what it was taken of
	Image     string    `json:"image"`
	CreatedAt time.Time `json:"created_at"`
	Bytes     int64     `json:"bytes"`
	Ready     bool      `json:"ready"` // false while it is taken (see above)
	// ForFork marks the snapshot a fork takes for its sandboxes, deleted
	// once they exist; a start deletes one a crash left.
	ForFork bool `json:"for_fork,omitempty"`
	// Memory says the snapshot holds the sandbox's memory too (gVisor):
	// sandboxes made from it start with its processes where they were.
	Memory bool `json:"memory,omitempty"`
}

// snapshotBook serialises the records' changes and quota counts.
type snapshotBook struct{ mu sync.Mutex }

func (m *Fleet) snapshotter() (sandbox.Snapshotter, bool) {
	sn, ok := m.provider.(sandbox.Snapshotter)
	return sn, ok && !m.cfg.Replicated
}

// CanSnapshot reports whether this gateway can take snapshots.
func (m *Fleet) CanSnapshot() bool {
	_, ok := m.snapshotter()
	return ok
}

func (m *Fleet) snapshotPath(id string) string {
	return filepath.Join(m.cfg.SnapshotDir(), filepath.Base(id)+".json")
}

func (m *Fleet) saveSnapshot(r SnapshotRecord) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return writeDurable(m.cfg.SnapshotDir(), m.snapshotPath(r.ID), data)
}

// snapshotRecords reads every record, oldest first; unreadable ones are
// logged and left out.
func (m *Fleet) snapshotRecords() []SnapshotRecord {
	ents, err := os.ReadDir(m.cfg.SnapshotDir())
	if err != nil {
		return nil
	}
	var out []SnapshotRecord
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(m.cfg.SnapshotDir(), e.Name()))
		var r SnapshotRecord
		if err == nil {
			err = json.Unmarshal(data, &r)
		}
		if err != nil {
			m.log.Warn("snapshot record unreadable; ignoring it", "file", e.Name(), "error", err)
			continue
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b SnapshotRecord) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// rollBackSnapshots deletes what a crash left of snapshots being taken,
// and the snapshots of forks a crash cut short (the forks made by then
// are sandboxes like any other).
func (m *Fleet) rollBackSnapshots(ctx context.Context) {
	sn, ok := m.snapshotter()
	if !ok {
		return
	}
	for _, r := range m.snapshotRecords() {
		if r.Ready && !r.ForFork {
			continue
		}
		if err := sn.DeleteSnapshot(ctx, r.ID); err != nil && !errors.Is(err, sandbox.ErrNoSnapshot) {
			m.log.Warn("roll back a snapshot cut short; the next start retries", "snapshot_id", r.ID, "error", err)
			continue
		}
		_ = os.Remove(m.snapshotPath(r.ID))
		m.log.Info("rolled back a snapshot a crash cut short, or a fork's", "snapshot_id", r.ID, "sandbox_id", r.SandboxID)
	}
}

// Snapshots lists p's tenant's snapshots, oldest first.
func (m *Fleet) Snapshots(p identity.Identity) []SnapshotRecord {
	return slices.DeleteFunc(m.snapshotRecords(), func(r SnapshotRecord) bool { return !r.Ready || r.ForFork || r.Tenant != p.Tenant })
}

// SnapshotFor returns snapshot id when p's tenant may use it; any other
// is not found.
func (m *Fleet) SnapshotFor(p identity.Identity, id string) (SnapshotRecord, error) {
	data, err := os.ReadFile(m.snapshotPath(id))
	var r SnapshotRecord
	if err == nil {
		err = json.Unmarshal(data, &r)
	}
	if err != nil || !r.Ready || r.Tenant != p.Tenant || r.ID != id {
		return SnapshotRecord{}, fmt.Errorf("snapshot %q: %w (snapshot_list lists yours)", id, sandbox.ErrNoSnapshot)
	}
	return r, nil
}

// Snapshot copies b's workspace into a new snapshot named name for p's
// tenant. name is what p calls it (letters, digits, '.', '_', '-');
// empty gives one from the sandbox id and the time.
func (m *Fleet) Snapshot(ctx context.Context, b *Box, p identity.Identity, name string) (SnapshotRecord, error) {
	return m.snapshot(ctx, b, p, name, false)
}

// snapshot is Snapshot; forFork marks the record a fork's (ForFork).
func (m *Fleet) snapshot(ctx context.Context, b *Box, p identity.Identity, name string, forFork bool) (SnapshotRecord, error) {
	sn, ok := m.snapshotter()
	if !ok {
		return SnapshotRecord{}, ErrCannotSnapshot
	}
	now := time.Now().UTC()
	if name == "" {
		name = b.ID()[:8] + "-" + now.Format("20060102T150405Z")
	}
	if !snapshotNamePattern.MatchString(name) {
		return SnapshotRecord{}, fmt.Errorf("%w: snapshot name %q: use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", ErrBadSnapshotRequest, name)
	}
	r := SnapshotRecord{ID: newSandboxID(), Name: name, Tenant: p.Tenant, Owner: p.Digest(), SandboxID: b.ID(), Image: b.Info().Image, CreatedAt: now, ForFork: forFork}
	if err := m.admitSnapshot(r); err != nil {
		return SnapshotRecord{}, err
	}
	start := time.Now()
	n, memory, err := m.takeSnapshot(context.WithoutCancel(ctx), sn, b, r.ID)
	if err == nil {
		r.Bytes, r.Ready, r.Memory = n, true, memory
		if err = m.saveSnapshot(r); err != nil {
			_ = sn.DeleteSnapshot(context.WithoutCancel(ctx), r.ID)
		}
	}
	if err != nil {
		_ = os.Remove(m.snapshotPath(r.ID))
	}
	ev := &audit.Event{Kind: audit.KindSnapshotCreate, Principal: p, Session: b.Session, SandboxID: b.ID(),
		Summary: map[string]string{"snapshot_id": r.ID, "name": name, "memory": strconv.FormatBool(memory)}, Outcome: audit.OutcomeOK,
		DurationMs: time.Since(start).Milliseconds()}
	if err != nil {
		ev.Outcome, ev.Error = audit.OutcomeError, err.Error()
	}
	m.appendAudit(ctx, ev)
	if err != nil {
		return SnapshotRecord{}, fmt.Errorf("snapshot sandbox %s: %w", b.ID(), err)
	}
	m.log.Info("snapshot taken", "sandbox_id", b.ID(), "snapshot_id", r.ID, "bytes", n, "duration_ms", ev.DurationMs)
	return r, nil
}

// takeSnapshot has the provider copy b's sandbox into snapshot snap and
// reports whether its memory went in too: it does where the provider can
// keep memory and the sandbox runs with no call in flight (its
// checkpoint closes the runner's connections, which would fail those
// calls); otherwise, or if the checkpoint fails, the files alone. The
// sandbox is not replaced, paused or resumed meanwhile.
func (m *Fleet) takeSnapshot(ctx context.Context, sn sandbox.Snapshotter, b *Box, snap string) (int64, bool, error) {
	ms, ok := sn.(sandbox.MemorySnapshotter)
	if keep, _ := m.KeepsMemory(); !ok || !keep {
		n, err := sn.Snapshot(ctx, b.ID(), snap)
		return n, false, err
	}
	b.replacing.Lock()
	defer b.replacing.Unlock()
	b.Mu.Lock()
	idle := !b.gone && !b.paused.Load() && b.inUse.Load() == 0
	if idle {
		b.DropClient() // its runner closes it; the next call dials again
	}
	b.Mu.Unlock()
	if idle {
		n, err := ms.SnapshotWithMemory(ctx, b.ID(), snap)
		if err == nil || !errors.Is(err, sandbox.ErrCannotKeepMemory) {
			return n, err == nil, err
		}
		m.log.Warn("snapshot without memory: the checkpoint failed", "sandbox_id", b.ID(), "error", err)
	}
	n, err := sn.Snapshot(ctx, b.ID(), snap)
	return n, false, err
}

// admitSnapshot checks r against its tenant's snapshot quota, counting
// what is being taken too, and records it not ready.
func (m *Fleet) admitSnapshot(r SnapshotRecord) error {
	m.snapshots.mu.Lock()
	defer m.snapshots.mu.Unlock()
	var n int
	var bytes int64
	for _, o := range m.snapshotRecords() {
		if o.Tenant == r.Tenant {
			n++
			bytes += o.Bytes
		}
	}
	if (m.cfg.MaxSnapshotsPerTenant > 0 && n >= m.cfg.MaxSnapshotsPerTenant) || (m.cfg.MaxSnapshotBytesPerTenant > 0 && bytes >= m.cfg.MaxSnapshotBytesPerTenant) {
		return fmt.Errorf("%w: your tenant keeps %d snapshots taking %s (limits %d and %s): delete one with snapshot_delete first",
			ErrSnapshotQuota, n, sizeText(bytes), m.cfg.MaxSnapshotsPerTenant, sizeText(m.cfg.MaxSnapshotBytesPerTenant))
	}
	return m.saveSnapshot(r)
}

// DeleteSnapshot deletes p's tenant's snapshot id; reason goes into the
// audit record. Sandboxes made from it keep their files.
func (m *Fleet) DeleteSnapshot(ctx context.Context, p identity.Identity, id, reason string) error {
	sn, ok := m.snapshotter()
	if !ok {
		return ErrCannotSnapshot
	}
	r, err := m.SnapshotFor(p, id)
	if err != nil {
		return err
	}
	m.snapshots.mu.Lock()
	defer m.snapshots.mu.Unlock()
	err = sn.DeleteSnapshot(context.WithoutCancel(ctx), id)
	if err == nil || errors.Is(err, sandbox.ErrNoSnapshot) {
		err = os.Remove(m.snapshotPath(id))
	}
	ev := &audit.Event{Kind: audit.KindSnapshotDelete, Principal: p, SandboxID: r.SandboxID,
		Summary: map[string]string{"snapshot_id": id, "name": r.Name, "reason": reason}, Outcome: audit.OutcomeOK}
	if err != nil {
		ev.Outcome, ev.Error = audit.OutcomeError, err.Error()
	}
	m.appendAudit(ctx, ev)
	return err
}

// Fork makes count new sandboxes for p, each starting with b's files as
// they are now: one snapshot is taken for them and deleted once they
// exist. Each fork is its own sandbox (id, limits, deadline, quota
// slot); errs holds, per fork, why it could not be made (a full live
// quota, say), and boxes the ones made, in order.
func (m *Fleet) Fork(ctx context.Context, b *Box, p identity.Identity, count int) (boxes []*Box, errs []error, err error) {
	if count < 1 || count > MaxForks {
		return nil, nil, fmt.Errorf("%w: count %d: fork makes 1 to %d sandboxes", ErrBadSnapshotRequest, count, MaxForks)
	}
	snap, err := m.snapshot(ctx, b, p, "fork-"+b.ID()[:8]+"-"+time.Now().UTC().Format("20060102T150405.000Z"), true)
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = m.DeleteSnapshot(context.WithoutCancel(ctx), p, snap.ID, "fork done") }()
	allow := b.Gate.Allow()
	inf := b.Info()
	boxes, errs = make([]*Box, count), make([]error, count)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4) // a few at a time: each is a container start
	for i := range count {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			boxes[i], errs[i] = m.CreateBox(ctx, p, Spec{Image: snap.Image, Allow: allow, Template: inf.Template, Metadata: inf.Metadata, Lifecycle: inf.Lifecycle, Snapshot: snap.ID})
		})
	}
	wg.Wait()
	return boxes, errs, nil
}
