package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// loadRun is what the scenarios share.
type loadRun struct {
	opts   options
	gw     *gatewayProcess
	client *mcpClient
	pool   *sessionPool
	stderr io.Writer
}

// scenario is one row of the table.
type scenario struct {
	name      string
	inDefault bool
	run       func(context.Context, *loadRun) result
}

// The calls the scenarios make, JSON encoded once.
var (
	kibContent = strings.Repeat("x", 1023) + "\n"
	writeKiB   = callSpec{"write_file", mustJSON(map[string]any{"path": "kib.txt", "content": kibContent}), false}
	readKiB    = callSpec{"read_file", mustJSON(map[string]any{"path": "kib.txt"}), false}
	echoHi     = callSpec{"run_shell", mustJSON(map[string]any{"command": "echo hi"}), false}
	echoHiProg = callSpec{"run_shell", mustJSON(map[string]any{"command": "echo hi"}), true}
	writeMiB   = callSpec{"write_file", mustJSON(map[string]any{"path": "mib.txt", "content": textOfSize(1 << 20)}), false}
	readMiB    = callSpec{"read_file", mustJSON(map[string]any{"path": "mib.txt"}), false}
	write8MiB  = callSpec{"write_file", mustJSON(map[string]any{"path": "8mib.txt", "content": textOfSize(8 << 20)}), false}
	runTrue    = callSpec{"run_shell", mustJSON(map[string]any{"command": "true"}), false}
)

func scenarioList() []scenario {
	few := func(o options) int { return o.sessions }
	many := func(o options) int { return o.manySessions }
	return []scenario{
		// Ordered so that the session pool grows once, from 10 to 100,
		// and then shrinks to the one session of the sequential ones.
		{"read1k-10", true, throughputScenario{"read1k-10", few, []callSpec{writeKiB}, readKiB}.run},
		{"echo-10", true, throughputScenario{"echo-10", few, nil, echoHi}.run},
		{"read1k-100", true, throughputScenario{"read1k-100", many, []callSpec{writeKiB}, readKiB}.run},
		{"echo-100", true, throughputScenario{"echo-100", many, nil, echoHi}.run},
		{"read1m", true, sequentialScenario{"read1m", 100, 1, []callSpec{writeMiB}, readMiB, 0}.run},
		// An 8 MiB write takes long enough that --duration alone would
		// leave too few calls for a median.
		{"write8m", true, sequentialScenario{"write8m", 20, 4, nil, write8MiB, 0}.run},
		{"echo-1", true, sequentialScenario{"echo-1", 500, 1, nil, echoHi, 0}.run},
		// The same with a progress token: the output comes back as
		// notifications ahead of the result, in an SSE stream.
		{"echo-progress", true, sequentialScenario{"echo-progress", 500, 1, nil, echoHiProg, 0}.run},
		// An agent thinks between calls: each call finds the gateway
		// and the sandbox's runner idle, which costs more than a call
		// right behind another.
		{"echo-spaced", true, sequentialScenario{"echo-spaced", 200, 2, nil, echoHi, 20 * time.Millisecond}.run},
		{"read1k-1", true, sequentialScenario{"read1k-1", 500, 1, []callSpec{writeKiB}, readKiB, 0}.run},
		{"start-burst", true, runStartBurst},
		{"click", true, runClick},
		{"density", false, runDensity},
	}
}

func scenarioNames() []string {
	var out []string
	for _, s := range scenarioList() {
		out = append(out, s.name)
	}
	return out
}

func defaultScenarios() []string {
	var out []string
	for _, s := range scenarioList() {
		if s.inDefault {
			out = append(out, s.name)
		}
	}
	return out
}

// runScenarios runs the chosen scenarios in order. A scenario that fails
// gets a row saying why, and the next one runs.
func runScenarios(ctx context.Context, o options, gw *gatewayProcess, client *mcpClient, stderr io.Writer) []result {
	lr := &loadRun{opts: o, gw: gw, client: client, pool: &sessionPool{client: client}, stderr: stderr}
	byName := map[string]scenario{}
	for _, s := range scenarioList() {
		byName[s.name] = s
	}
	var results []result
	for _, name := range o.scenarios {
		if ctx.Err() != nil {
			results = append(results, result{Scenario: name, Failure: "not run: " + context.Cause(ctx).Error()})
			continue
		}
		// A deployment's warm pool is full before load arrives; a pool
		// still filling (at start, or after the scenario before drained
		// it) would compete with the measured calls for the CPU.
		if ready := gw.waitPoolSettled(ctx, 3*time.Minute); ready >= 0 {
			fmt.Fprintf(stderr, "load: %s: the warm pool holds %.0f ready sandboxes\n", name, ready)
		}
		fmt.Fprintf(stderr, "load: %s: starting\n", name)
		began := time.Now()
		res := byName[name].run(ctx, lr)
		if ctx.Err() != nil && res.Failure == "" {
			res.Failure = "cut short: " + context.Cause(ctx).Error()
		}
		fmt.Fprintf(stderr, "load: %s: done in %v: %d calls, %d errors, p50 %.2f ms, p99 %.2f ms %s\n", name,
			time.Since(began).Round(time.Millisecond), res.Calls, res.Errors, res.P50Ms, res.P99Ms, pre("FAILED: ", res.Failure))
		results = append(results, res)
	}
	return results
}

// callSpec is one tool call with its arguments in JSON.
type callSpec struct {
	tool string
	args []byte
	// progress asks for progress (a progressToken in _meta), as clients
	// that show a command's output while it runs do: the gateway then
	// streams the output as notifications and the response is an SSE
	// stream.
	progress bool
}

// call makes the call on s under the per-call timeout and returns how
// long its response took to arrive (see callToolAt).
func (c callSpec) call(ctx context.Context, s *session) (time.Duration, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	began := time.Now()
	_, n, arrived, err := s.callToolAt(ctx, c.tool, c.args, c.progress)
	return arrived.Sub(began), n, err
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// textOfSize returns n bytes of printable text in 64-byte lines.
func textOfSize(n int) string {
	line := strings.Repeat("0123456789abcdef", 4)[:63] + "\n"
	return strings.Repeat(line, n/len(line)) + strings.Repeat("y", n%len(line))
}

// sessionPool keeps the sessions of the throughput and sequential
// scenarios open from one scenario to the next, so that consecutive
// scenarios on as many sessions do not make their sandboxes again (the
// warm-up of a scenario still calls each one before timing).
type sessionPool struct {
	client   *mcpClient
	sessions []*session
}

// exactly returns n sessions, opening any missing and deleting any more:
// idle sandboxes cost the gateway CPU too, and a scenario's numbers must
// not depend on which scenario ran before it.
func (p *sessionPool) exactly(ctx context.Context, n int) ([]*session, error) {
	if extra := len(p.sessions) - n; extra > 0 {
		forEach(ctx, p.sessions[n:], 16, func(ctx context.Context, s *session) { _ = s.close(ctx) })
		p.sessions = p.sessions[:n]
	}
	missing := n - len(p.sessions)
	if missing == 0 {
		return p.sessions, nil
	}
	opened := make([]*session, missing)
	errs := make([]error, missing)
	forEach(ctx, indexes(missing), 16, func(ctx context.Context, i int) {
		opened[i], errs[i] = p.client.openSession(ctx)
	})
	var firstErr error
	for i, s := range opened {
		switch {
		case errs[i] != nil:
			firstErr = cmp.Or(firstErr, errs[i])
		case s == nil: // not started: ctx ended
			firstErr = cmp.Or(firstErr, context.Cause(ctx))
		default:
			p.sessions = append(p.sessions, s)
		}
	}
	if firstErr != nil {
		return nil, fmt.Errorf("open session: %w", firstErr)
	}
	return p.sessions, nil
}

func indexes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// warmUp makes calls, in order, on every session (16 sessions at a
// time): the first call of a session creates its sandbox, which the
// timed phase must not count.
func warmUp(ctx context.Context, sessions []*session, calls []callSpec) error {
	var mu sync.Mutex
	var firstErr error
	forEach(ctx, sessions, 16, func(ctx context.Context, s *session) {
		for _, c := range calls {
			if _, _, err := c.call(ctx, s); err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				return
			}
		}
	})
	if firstErr == nil && ctx.Err() != nil {
		firstErr = context.Cause(ctx)
	}
	return firstErr
}

// maxCallsPerPhase bounds a timed phase by count as well as by time.
const maxCallsPerPhase = 2_000_000

// timedPhase runs callers goroutines, each calling fn in a loop until
// duration has passed or the phase has made maxCalls calls, and returns
// how long it took until the last caller finished.
func timedPhase(ctx context.Context, duration time.Duration, callers, maxCalls int, fn func(ctx context.Context, caller int)) time.Duration {
	perCaller := max(1, maxCalls/callers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	var deadline time.Time
	for i := range callers {
		wg.Go(func() {
			<-start
			for n := 0; n < perCaller && time.Now().Before(deadline) && ctx.Err() == nil; n++ {
				fn(ctx, i)
			}
		})
	}
	began := time.Now()
	deadline = began.Add(duration)
	close(start)
	wg.Wait()
	return time.Since(began)
}

// gatewayCPU measures the gateway's CPU time across a timed phase, and
// its rate just before while idle: a slow scenario's per-call figure is
// otherwise hard to tell apart from background work (sweeps,
// reconciliation, garbage collection).
//
// Beside it, the runners' CPU (every process named runner: the sandboxes'
// agents, whose user processes are not counted) and the whole host's busy
// time, so that a change on one side of the runner connection is seen
// for what it costs the machine, not only through a throughput figure
// that moves by a tenth from run to run on a shared VM.
type gatewayCPU struct {
	pid    int
	idle   time.Duration // CPU per second before the phase
	before time.Duration
	err    error

	runnersBefore time.Duration
	hostBefore    time.Duration
	hostErr       error
}

// idleSample is how long the idle rate is measured (CPU time is counted
// in 10 ms ticks).
const idleSample = 2 * time.Second

func startGatewayCPU(ctx context.Context, gw *gatewayProcess) *gatewayCPU {
	c := &gatewayCPU{pid: gw.pid()}
	idleFrom, err := processCPU(c.pid)
	select {
	case <-time.After(idleSample):
	case <-ctx.Done():
	}
	c.before, c.err = processCPU(c.pid)
	c.runnersBefore = namedCPU("runner")
	c.hostBefore, c.hostErr = hostBusy()
	if err == nil && c.err == nil {
		c.idle = (c.before - idleFrom) * time.Second / idleSample
	}
	return c
}

// perCall records the gateway's CPU per call since start in res.
func (c *gatewayCPU) perCall(res *result, calls int) {
	after, err := processCPU(c.pid)
	if c.err != nil || err != nil || calls == 0 {
		return
	}
	perCall := ms(after-c.before) / float64(calls)
	res.metric("gateway_idle_cpu_ms_per_s", ms(c.idle), "")
	res.metric("gateway_cpu_ms_per_call", perCall, fmt.Sprintf("gateway CPU %.3f ms/call (idle %.0f ms/s)", perCall, ms(c.idle)))
	runners := ms(namedCPU("runner")-c.runnersBefore) / float64(calls)
	res.metric("runner_cpu_ms_per_call", runners, fmt.Sprintf("runners %.3f", runners))
	if host, err := hostBusy(); err == nil && c.hostErr == nil {
		perCall := ms(host-c.hostBefore) / float64(calls)
		res.metric("host_cpu_ms_per_call", perCall, fmt.Sprintf("host %.3f", perCall))
	}
}

// throughputScenario is many callers on a set of sessions, timed.
type throughputScenario struct {
	name     string
	sessions func(options) int
	setup    []callSpec // made once per session before the warm-up call
	call     callSpec
}

func (t throughputScenario) run(ctx context.Context, lr *loadRun) result {
	callers, nSessions := lr.opts.callers, t.sessions(lr.opts)
	res := result{Scenario: t.name, Callers: callers, Sessions: nSessions}
	sessions, err := lr.pool.exactly(ctx, nSessions)
	if err != nil {
		res.Failure = err.Error()
		return res
	}
	began := time.Now()
	if err := warmUp(ctx, sessions, append(append([]callSpec{}, t.setup...), t.call)); err != nil {
		res.Failure = "warm-up: " + err.Error()
		return res
	}
	fmt.Fprintf(lr.stderr, "load: %s: warm-up of %d sessions took %v\n", t.name, nSessions, time.Since(began).Round(time.Millisecond))
	// The warm-up's new sessions drew on the warm pool; its refill is
	// not part of what this scenario measures.
	lr.gw.waitPoolSettled(ctx, 3*time.Minute)

	cpu := startGatewayCPU(ctx, lr.gw)
	profile := lr.startProfile(ctx, t.name, lr.opts.duration)
	rec := &recorder{}
	elapsed := timedPhase(ctx, lr.opts.duration, callers, maxCallsPerPhase, func(ctx context.Context, caller int) {
		took, n, err := t.call.call(ctx, sessions[caller%len(sessions)])
		rec.addUnlessCancelled(ctx, took, n, err)
	})
	cpu.perCall(&res, rec.calls())
	profile.finish()
	return rec.merge(res, elapsed)
}

// sequentialScenario is one caller making one call after another, up to
// maxCalls or durations times --duration, whichever ends first.
type sequentialScenario struct {
	name      string
	maxCalls  int
	durations int
	setup     []callSpec
	call      callSpec
	pause     time.Duration // after each call
}

func (q sequentialScenario) run(ctx context.Context, lr *loadRun) result {
	res := result{Scenario: q.name, Callers: 1, Sessions: 1}
	sessions, err := lr.pool.exactly(ctx, 1)
	if err != nil {
		res.Failure = err.Error()
		return res
	}
	if err := warmUp(ctx, sessions, append(append([]callSpec{}, q.setup...), q.call)); err != nil {
		res.Failure = "warm-up: " + err.Error()
		return res
	}
	rec := &recorder{}
	cpu := startGatewayCPU(ctx, lr.gw)
	bound := time.Duration(q.durations) * lr.opts.duration
	// The phase usually ends by count before its time bound; the profile
	// then also spans some idle time, which a CPU profile does not sample.
	profile := lr.startProfile(ctx, q.name, bound)
	elapsed := timedPhase(ctx, bound, 1, q.maxCalls, func(ctx context.Context, _ int) {
		took, n, err := q.call.call(ctx, sessions[0])
		rec.addUnlessCancelled(ctx, took, n, err)
		if q.pause > 0 {
			select {
			case <-time.After(q.pause):
			case <-ctx.Done():
			}
		}
	})
	cpu.perCall(&res, rec.calls())
	profile.finish()
	if b := rec.responseBytesPerCall(); b >= 1<<20 {
		res.metric("response_bytes_per_call", b, fmt.Sprintf("%.2f MiB/response", b/(1<<20)))
	} else {
		res.metric("response_bytes_per_call", b, fmt.Sprintf("%.0f B/response", b))
	}
	return rec.merge(res, elapsed)
}

// merge fills res's measured fields from the recorder, keeping what res
// already has (metrics, extra, failure).
func (r *recorder) merge(res result, elapsed time.Duration) result {
	m := r.result(res.Scenario, res.Callers, res.Sessions, elapsed)
	m.Metrics, m.Extra, m.Failure = res.Metrics, res.Extra, res.Failure
	return m
}

// runStartBurst starts --burst-size sessions at once and times each from
// its initialize to the result of its first tool call, which includes
// making its sandbox.
func runStartBurst(ctx context.Context, lr *loadRun) result {
	n := lr.opts.burstSize
	res := result{Scenario: "start-burst", Callers: n, Sessions: n}
	_, _ = lr.pool.exactly(ctx, 0) // the burst's sandboxes are all there are
	rec := &recorder{}
	// The two halves of a start, timed apart: opening the session
	// (initialize and its notification) and the first call (which claims
	// or makes the sandbox and runs in it).
	opens, firsts := &recorder{}, &recorder{}
	// What the bursts cost the machine: CPU of the gateway, of the
	// runners and of the whole host while the burst ran (the pool waits a
	// second after a take before it refills, so no refill is in it).
	var gwCPU, runnerCPU, hostCPU time.Duration
	var burstWall, deleteWall time.Duration
	var hits, misses float64
	for range lr.opts.bursts {
		if ctx.Err() != nil {
			break
		}
		if ready := lr.gw.waitPoolSettled(ctx, 3*time.Minute); ready >= 0 {
			fmt.Fprintf(lr.stderr, "load: start-burst: the warm pool holds %.0f ready sandboxes\n", ready)
		}
		h0, m0, _ := lr.gw.poolClaims(ctx)
		sessions := make([]*session, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				cctx, cancel := context.WithTimeout(ctx, callTimeout)
				defer cancel()
				began := time.Now()
				s, err := lr.client.openSession(cctx)
				sessions[i] = s
				opened := time.Now()
				opens.addUnlessCancelled(ctx, opened.Sub(began), 0, err)
				if err == nil {
					_, _, err = s.callTool(cctx, runTrue.tool, runTrue.args)
					firsts.addUnlessCancelled(ctx, time.Since(opened), 0, err)
				}
				rec.addUnlessCancelled(ctx, time.Since(began), 0, err)
			})
		}
		gw0, _ := processCPU(lr.gw.pid())
		runners0 := namedCPU("runner")
		host0, _ := hostBusy()
		began := time.Now()
		close(start)
		wg.Wait()
		burstWall = max(burstWall, time.Since(began))
		gw1, _ := processCPU(lr.gw.pid())
		host1, _ := hostBusy()
		gwCPU, runnerCPU, hostCPU = gwCPU+gw1-gw0, runnerCPU+namedCPU("runner")-runners0, hostCPU+host1-host0
		if h1, m1, ok := lr.gw.poolClaims(ctx); ok {
			hits, misses = hits+h1-h0, misses+m1-m0
		}

		began = time.Now()
		var opened []*session
		for _, s := range sessions {
			if s != nil {
				opened = append(opened, s)
			}
		}
		forEach(context.WithoutCancel(ctx), opened, 16, func(ctx context.Context, s *session) {
			dctx, cancel := context.WithTimeout(ctx, callTimeout)
			defer cancel()
			_ = s.close(dctx)
		})
		deleteWall = max(deleteWall, time.Since(began))
	}
	res = rec.merge(res, 0)
	res.metric("max_ms", res.MaxMs, fmt.Sprintf("max %.0f ms", res.MaxMs))
	o, f := opens.result("", 0, 0, 0), firsts.result("", 0, 0, 0)
	res.metric("open_p50_ms", o.P50Ms, fmt.Sprintf("session open p50/p99 %.1f/%.1f ms", o.P50Ms, o.P99Ms))
	res.metric("open_p99_ms", o.P99Ms, "")
	res.metric("first_call_p50_ms", f.P50Ms, fmt.Sprintf("first call %.1f/%.1f ms", f.P50Ms, f.P99Ms))
	res.metric("first_call_p99_ms", f.P99Ms, "")
	if starts := float64(rec.calls()); starts > 0 {
		res.metric("host_cpu_ms_per_start", ms(hostCPU)/starts, fmt.Sprintf("CPU per start: host %.1f ms, gateway %.1f, runners %.1f",
			ms(hostCPU)/starts, ms(gwCPU)/starts, ms(runnerCPU)/starts))
		res.metric("gateway_cpu_ms_per_start", ms(gwCPU)/starts, "")
		res.metric("runner_cpu_ms_per_start", ms(runnerCPU)/starts, "")
	}
	res.metric("burst_wall_s", burstWall.Seconds(), fmt.Sprintf("all %d ready in %.1f s", n, burstWall.Seconds()))
	res.metric("delete_wall_s", deleteWall.Seconds(), fmt.Sprintf("deleted in %.1f s", deleteWall.Seconds()))
	if hits+misses > 0 {
		res.metric("pool_hits", hits, describeClaims(hits, misses))
		res.metric("pool_misses", misses, "")
	}
	if lr.opts.bursts > 1 {
		res.Extra = append(res.Extra, fmt.Sprintf("%d bursts", lr.opts.bursts))
	}
	return res
}
