package fleet

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sandgate/sandgate/gateway/metrics"
	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/sandbox"
)

// The warm pool keeps started sandboxes ready per image, so that a new
// session's first call (or a sandbox_create) takes one instead of waiting
// for a container to be made and started. A pooled container is made with
// the same spec as any sandbox (limits, image, no network) except that it
// has no owner: claiming it writes a claim record (claims.go; the
// provider's own record for replicated gateways, sandbox.PoolClaims) and
// then goes on exactly as a fresh creation does (quota, audit, egress
// gate).
//
// The pool refills in the background, at most poolParallel creations at
// once, and (sandboxes on this host) only while the host keeps enough
// memory available. A replicated gateway's pool also records a use of
// each ready sandbox now and then, so the other replicas know it is held
// (tend).

const (
	// poolParallel bounds the pool's creations in flight, so a refill
	// after a burst does not starve the callers that missed it.
	poolParallel = 2
	// poolRetry is the wait after a failed creation or while memory is
	// short, before the pool tries again.
	poolRetry = 5 * time.Second
	// poolQuiet is how long the pool waits after a take before it starts
	// refilling: making containers takes both cores for a while, and
	// during a burst of new sessions that would slow the very callers the
	// pool is there for. A burst's takes keep pushing the refill back.
	poolQuiet = time.Second
)

type pool struct {
	m    *Fleet
	want map[string]int // image → sandboxes to keep ready

	mu      sync.Mutex
	ready   map[string][]pooled // oldest first
	making  map[string]int      // creations in flight
	held    map[string]bool     // ids ready or being handed over
	taken   time.Time           // the last take
	pause   time.Time           // no creations before this (after a failure or short memory)
	stopped bool
	wake    chan struct{}
	done    chan struct{}
	// inflight counts the creations in flight, which close waits for: a
	// gateway that exited under one would leave its half-made container
	// or its mounted workspace behind. Added to under mu by next, only
	// while not stopped, so close's Wait never races an Add.
	inflight sync.WaitGroup
}

// pooled is a ready sandbox and its runner connection, dialled when it
// was made: a claim hands both over, so a new session's first call
// neither dials nor waits for the runner's handshake.
type pooled struct {
	sb     sandbox.Sandbox
	runner *protocol.Client
}

func newPool(m *Fleet, want map[string]int) *pool {
	return &pool{m: m, want: want, ready: map[string][]pooled{}, making: map[string]int{},
		held: map[string]bool{}, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// serves reports whether image has a pool.
func (p *pool) serves(image string) bool { return p != nil && p.want[image] > 0 }

// take hands out a ready sandbox of image, oldest first, with its runner
// connection. Its id stays held, so that reconciliation leaves it alone,
// until release.
func (p *pool) take(image string) (pooled, bool) {
	if !p.serves(image) {
		return pooled{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.ready[image]
	if len(q) == 0 {
		return pooled{}, false
	}
	r := q[0]
	p.ready[image] = q[1:]
	p.taken = time.Now()
	p.kick()
	return r, true
}

// release ends the pool's hold on a sandbox it handed out: its new owner
// tracks it now (or it was destroyed).
func (p *pool) release(id string) {
	p.mu.Lock()
	delete(p.held, id)
	p.mu.Unlock()
}

// holds reports whether id is the pool's (ready or being handed over).
func (p *pool) holds(id string) bool {
	if p == nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held[id]
}

// size returns the ready sandboxes per image.
func (p *pool) size() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := map[string]int{}
	for image := range p.want {
		n[image] = len(p.ready[image])
	}
	return n
}

func (p *pool) kick() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// run refills the pool until ctx ends.
func (p *pool) run(ctx context.Context) {
	defer close(p.done)
	if p.m.records.poolShared() {
		go p.tend(ctx)
	}
	slots := make(chan struct{}, poolParallel)
	quiet := time.NewTimer(0)
	defer quiet.Stop()
	for {
		if wait := p.quietFor(); wait > 0 {
			quiet.Reset(wait)
			select {
			case <-ctx.Done():
				return
			case <-quiet.C:
			}
			continue
		}
		for {
			// A slot first, then the decision: a creation that failed
			// while this waited for the slot has paused the pool.
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			image := ""
			if p.quietFor() <= 0 {
				image = p.next()
			}
			if image == "" {
				<-slots
				break
			}
			// Replicated gateways' sandboxes run on the cluster's nodes,
			// whose scheduler places them; this host's memory is not theirs.
			if !p.m.records.poolShared() && !memoryAllows(p.m.cfg.Limits.MemoryBytes) {
				p.undo(image)
				<-slots
				p.m.log.Warn("warm pool paused: the host's available memory is low", "image", image)
				p.pauseFor(poolRetry)
				break
			}
			go func() {
				defer p.inflight.Done()
				defer func() { <-slots; p.kick() }()
				if err := p.make(ctx, image); err != nil && ctx.Err() == nil {
					// Paused, or a missing image would be retried as
					// fast as it fails.
					p.m.log.Warn("warm pool: make a sandbox; retrying later", "image", image, "error", err, "retry_in", poolRetry)
					p.pauseFor(poolRetry)
				}
			}()
		}
		select {
		case <-ctx.Done():
			return
		case <-p.wake: // a take, a finished creation, or a pause
		}
	}
}

// quietFor returns how long to wait before refilling: poolQuiet after
// the last take, and any pause.
func (p *pool) quietFor() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return max(poolQuiet-time.Since(p.taken), time.Until(p.pause))
}

// pauseFor holds creations back for d.
func (p *pool) pauseFor(d time.Duration) {
	p.mu.Lock()
	p.pause = time.Now().Add(d)
	p.mu.Unlock()
	p.kick()
}

// next picks an image short of its target and counts a creation in
// flight for it, or returns "".
func (p *pool) next() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return ""
	}
	for image, want := range p.want {
		if len(p.ready[image])+p.making[image] < want {
			p.making[image]++
			p.inflight.Add(1)
			return image
		}
	}
	return ""
}

// undo gives back a creation next counted but that never started.
func (p *pool) undo(image string) {
	p.mu.Lock()
	p.making[image]--
	p.mu.Unlock()
	p.inflight.Done()
}

// make creates one pooled sandbox of image and adds it to the pool.
func (p *pool) make(ctx context.Context, image string) error {
	// A claim gives it the claimant's expiry. Where the provider records
	// the claim, the expiry it is made with must allow the wait in the
	// pool too: a pod's kubelet deadline can be lowered, never raised
	// (see maxAge).
	lifetime := p.m.cfg.Limits.MaxLifetime
	if p.m.records.poolShared() {
		lifetime += p.maxAge()
	}
	spec := sandbox.Spec{ID: newSandboxID(), Image: image, Limits: p.m.cfg.Limits, Pool: image,
		ExpiresAt: time.Now().Add(lifetime)}
	p.mu.Lock()
	p.held[spec.ID] = true
	p.mu.Unlock()
	r, err := p.makeReady(ctx, spec)
	p.mu.Lock()
	p.making[image]--
	keep := err == nil && !p.stopped
	if keep {
		p.ready[image] = append(p.ready[image], r)
	} else {
		delete(p.held, spec.ID)
	}
	p.mu.Unlock()
	if err == nil && !keep { // stopped meanwhile: the pool is being emptied
		p.destroy(r)
	}
	return err
}

// makeReady creates the sandbox of spec, connects to its runner, warms
// it up and reserves its claim record; a sandbox whose runner cannot be
// reached or cannot run the warm-up call is removed again.
func (p *pool) makeReady(ctx context.Context, spec sandbox.Spec) (pooled, error) {
	sb, err := p.m.provider.Create(ctx, spec)
	if err != nil {
		return pooled{}, err
	}
	c, err := protocol.Dial(ctx, sb.Dial)
	if err != nil {
		p.destroy(pooled{sb: sb})
		return pooled{}, fmt.Errorf("connect to the runner of pooled sandbox %s: %w", sb.ID(), err)
	}
	if err := warmUp(ctx, c); err != nil {
		p.destroy(pooled{sb: sb, runner: c})
		return pooled{}, fmt.Errorf("warm up the runner of pooled sandbox %s: %w", sb.ID(), err)
	}
	if err := p.m.records.pooled(sb.ID()); err != nil {
		p.destroy(pooled{sb: sb, runner: c})
		return pooled{}, fmt.Errorf("reserve the claim record of pooled sandbox %s: %w", sb.ID(), err)
	}
	return pooled{sb: sb, runner: c}, nil
}

// warmUp runs one short command through a new runner, as a first call
// would, so that the claimant's first call finds the runner's forking
// thread, reaper and signal handling started, its code and the shell
// paged in and its encoders built: a runner's first command costs it
// several times what the next ones do, and in a burst of new sessions
// that is CPU the callers wait for (a burst of 50 from the pool: p50
// 113-117 -> 90-98 ms, host CPU per start 4.6-5.0 -> 3.9-4.2 ms).
// `true` leaves nothing behind. A runner that cannot carry the call is
// broken and not pooled; a command the image cannot run (no shell) is
// not the pool's affair, and its claimant will hear about it.
func warmUp(ctx context.Context, c *protocol.Client) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := c.Stream(ctx, protocol.OpExec, protocol.ExecRequest{Command: "true", TimeoutMs: 10_000}, func(protocol.Event) {})
	if pe := (*protocol.Error)(nil); errors.As(err, &pe) {
		return nil
	}
	return err
}

// maxAge is how long a replicated gateway keeps a ready sandbox: a claim
// gives it a whole lifetime (MaxLifetime) from the claim, and its pod's
// kubelet deadline, set when it was made, allows maxAge of waiting plus
// that lifetime (see make).
func (p *pool) maxAge() time.Duration { return p.m.cfg.Limits.MaxLifetime }

// tend runs in a replicated gateway, whose ready sandboxes the other
// replicas see. Every touchEvery it records a use of each (Recorder.Touch):
// a pooled sandbox that nobody claimed and nobody used for as long as an
// idle sandbox may stay belongs to a gateway that is gone, and any
// replica removes it (due). And it replaces those older than maxAge.
func (p *pool) tend(ctx context.Context) {
	wait := time.NewTimer(p.m.touchEvery)
	defer wait.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-wait.C:
		}
		p.TendOnce(ctx, time.Now())
		wait.Reset(p.m.touchEvery)
	}
}

// TendOnce is one round of tend, at now.
func (p *pool) TendOnce(ctx context.Context, now time.Time) {
	for _, r := range p.retire(now) {
		p.destroy(r)
		p.release(r.sb.ID())
		p.inflight.Done()
	}
	for _, id := range p.readyIDs() {
		tctx, cancel := context.WithTimeout(ctx, touchTimeout)
		if err := p.m.records.touch(tctx, id, now); err != nil && ctx.Err() == nil {
			p.m.log.Warn("warm pool: record that a ready sandbox is still held", "sandbox_id", id, "error", err)
		}
		cancel()
	}
}

// retire takes the ready sandboxes older than maxAge out of the pool,
// counted as in flight (close waits for their removal), and wakes the
// refill.
func (p *pool) retire(now time.Time) []pooled {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return nil // close removes them
	}
	var old []pooled
	for image, q := range p.ready {
		keep := q[:0:0]
		for _, r := range q {
			if now.Sub(r.sb.Info().CreatedAt) > p.maxAge() {
				old = append(old, r)
			} else {
				keep = append(keep, r)
			}
		}
		p.ready[image] = keep
	}
	p.inflight.Add(len(old))
	if len(old) > 0 {
		p.kick()
	}
	return old
}

// readyIDs lists the ready sandboxes.
func (p *pool) readyIDs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var ids []string
	for _, q := range p.ready {
		for _, r := range q {
			ids = append(ids, r.sb.ID())
		}
	}
	return ids
}

// close stops refilling, waits for the creations in flight (cancelled
// with the context run was given, they roll back or are removed) and
// removes every ready sandbox.
func (p *pool) close(ctx context.Context) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
	finished := make(chan struct{})
	go func() { p.inflight.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-ctx.Done():
		p.m.log.Warn("warm pool: shutdown did not wait for the creations in flight; the next start removes what they left", "error", ctx.Err())
	}
	p.mu.Lock()
	var all []pooled
	for image, q := range p.ready {
		all = append(all, q...)
		delete(p.ready, image)
	}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, r := range all {
		wg.Go(func() {
			if r.runner != nil {
				_ = r.runner.Close()
			}
			if err := p.m.provider.Remove(ctx, r.sb.ID()); err != nil && !isNotFound(err) {
				p.m.log.Warn("remove a pooled sandbox", "sandbox_id", r.sb.ID(), "error", err)
			} else {
				p.m.claimFiles().drop(r.sb.ID())
			}
			p.release(r.sb.ID())
		})
	}
	wg.Wait()
}

// destroy removes a pooled sandbox that will never be handed out, and
// closes its runner connection.
func (p *pool) destroy(r pooled) {
	if r.runner != nil {
		_ = r.runner.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.m.provider.Remove(ctx, r.sb.ID()); err != nil && !isNotFound(err) {
		p.m.log.Warn("remove a pooled sandbox", "sandbox_id", r.sb.ID(), "error", err)
		return
	}
	p.m.claimFiles().drop(r.sb.ID())
}

// memoryAllows reports whether the host can take one more sandbox of
// limit bytes and keep a tenth of its memory available (Linux; elsewhere
// it always can). A pooled sandbox uses little until it is claimed, but
// a full pool on a host short of memory would be claimed into trouble.
func memoryAllows(limit int64) bool {
	total, avail, ok := meminfo()
	return !ok || avail-limit >= total/10
}

// meminfo reads MemTotal and MemAvailable, in bytes.
func meminfo() (total, avail int64, ok bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, _ := strings.Cut(sc.Text(), ":")
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		kib, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			continue
		}
		switch name {
		case "MemTotal":
			total = kib << 10
		case "MemAvailable":
			avail = kib << 10
		}
	}
	return total, avail, total > 0 && avail > 0
}

// claim records that pooled sandbox sb is now spec's, where a restarted
// gateway (claims.go) or every replica (the provider's PoolClaims) reads
// it, and returns sb as spec's. Only this gateway's pool hands out sb,
// so the provider's ErrClaimed would mean someone else's claim (a bug);
// the caller must not use it then, nor remove it.
func (m *Fleet) claim(ctx context.Context, sb sandbox.Sandbox, spec sandbox.Spec) (sandbox.Info, error) {
	return m.records.claim(ctx, sb, spec)
}

// poolSizes reports the ready sandboxes per image at scrape time.
type poolSizes struct{ p *pool }

var (
	poolDesc   = prometheus.NewDesc("sandgate_pool_ready", "Warm pool sandboxes ready to be claimed, by image.", []string{"image"}, nil)
	targetDesc = prometheus.NewDesc("sandgate_pool_target", "Warm pool sandboxes to keep ready (--pool-size, --pool), by image.", []string{"image"}, nil)
)

func (s poolSizes) Describe(ch chan<- *prometheus.Desc) { ch <- poolDesc; ch <- targetDesc }

func (s poolSizes) Collect(ch chan<- prometheus.Metric) {
	for image, n := range s.p.size() {
		ch <- prometheus.MustNewConstMetric(poolDesc, prometheus.GaugeValue, float64(n), image)
		ch <- prometheus.MustNewConstMetric(targetDesc, prometheus.GaugeValue, float64(s.p.want[image]), image)
	}
}

// startSandbox gives a creation its container: a pooled one when image
// has a ready one and its claim is recorded, else a new one. source says
// which (metrics.StartPool or metrics.StartCold); runner is a pooled
// sandbox's open runner connection (nil for a new one). A pooled sandbox
// stays held by the pool until the caller calls m.pool.release(sb.ID()).
func (m *Fleet) startSandbox(ctx context.Context, spec sandbox.Spec) (sb sandbox.Sandbox, runner *protocol.Client, source string, err error) {
	// A pooled sandbox's workspace is empty: one made from a snapshot is
	// made fresh.
	if m.pool.serves(spec.Image) && spec.Snapshot == "" {
		if r, ok := m.pool.take(spec.Image); ok {
			info, err := m.claim(ctx, r.sb, spec)
			if err == nil {
				m.metrics.PoolClaims.WithLabelValues("hit").Inc()
				return claimed{Sandbox: r.sb, info: info}, r.runner, metrics.StartPool, nil
			}
			// Unrecorded, the claim would not survive a restart: the
			// container is destroyed, never handed out, and the caller
			// gets a fresh one. One claimed by someone else is theirs.
			m.log.Error("warm pool: claim not recorded; making a fresh sandbox instead", "sandbox_id", r.sb.ID(), "error", err)
			if errors.Is(err, sandbox.ErrClaimed) {
				_ = r.runner.Close()
			} else {
				m.pool.destroy(r)
			}
			m.pool.release(r.sb.ID())
		}
		m.metrics.PoolClaims.WithLabelValues("miss").Inc()
	}
	sb, err = m.provider.Create(ctx, spec)
	return sb, nil, metrics.StartCold, err
}
