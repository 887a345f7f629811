package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// densityWorkers bounds the sandbox_create calls in flight: density is
// about how many idle sandboxes fit, not how fast they start.
const densityWorkers = 8

// idleBox is one sandbox the density scenario made.
type idleBox struct {
	sandboxID   string
	containerID string
}

// runDensity creates --density-n idle sandboxes, stopping at the first
// failure, measures what one costs, and destroys them.
func runDensity(ctx context.Context, lr *loadRun) result {
	res := result{Scenario: "density", Callers: densityWorkers, Sessions: 1}
	// The pool's sandboxes would count against the tenant quota and blur
	// the memory figures.
	_, _ = lr.pool.exactly(ctx, 0)
	availBefore, _ := memAvailable()
	s, err := lr.client.openSession(ctx)
	if s != nil {
		defer closeQuietly(ctx, s)
	}
	if err != nil {
		res.Failure = err.Error()
		return res
	}

	boxes, rec, elapsed, firstErr := createIdleBoxes(ctx, s, lr.opts.densityN)
	// Destroyed in parallel before the session is deleted: the gateway
	// ends a session's sandboxes one by one.
	defer destroyIdleBoxes(ctx, lr, s, boxes)
	res = rec.merge(res, elapsed)
	res.metric("created", float64(len(boxes)), fmt.Sprintf("created %d of %d", len(boxes), lr.opts.densityN))
	if firstErr != nil {
		res.Extra = append(res.Extra, "first failure: "+truncate(firstErr.Error(), 160))
	}
	if len(boxes) == 0 {
		return res
	}

	// Let the last sandboxes settle into idleness before measuring.
	select {
	case <-time.After(3 * time.Second):
	case <-ctx.Done():
		return res
	}
	measureIdleBoxes(&res, boxes)
	if rss, threads, err := processStatus(lr.gw.pid()); err == nil {
		res.metric("gateway_rss_bytes", float64(rss), "gateway RSS "+mib(rss))
		res.metric("gateway_threads", float64(threads), fmt.Sprintf("%d threads", threads))
	}
	if m := lr.gw.scrapeMetrics(ctx); m != nil {
		res.metric("gateway_goroutines", m["go_goroutines"], fmt.Sprintf("%.0f goroutines", m["go_goroutines"]))
		res.metric("live_sandboxes", sumOf(m, "sandgate_sandboxes_live"), fmt.Sprintf("%.0f live sandboxes", sumOf(m, "sandgate_sandboxes_live")))
	}
	if availAfter, err := memAvailable(); err == nil && availBefore > 0 {
		res.metric("host_mem_available_before_bytes", float64(availBefore), "")
		res.metric("host_mem_available_after_bytes", float64(availAfter), "")
		perBox := (availBefore - availAfter) / int64(len(boxes))
		res.metric("host_mem_per_sandbox_bytes", float64(perBox), fmt.Sprintf("host MemAvailable %s -> %s (%s per sandbox)",
			mib(availBefore), mib(availAfter), mib(perBox)))
	}
	return res
}

// createIdleBoxes makes up to n sandboxes with densityWorkers calls in
// flight, and stops starting new ones at the first failure.
func createIdleBoxes(ctx context.Context, s *session, n int) ([]idleBox, *recorder, time.Duration, error) {
	rec := &recorder{}
	var (
		mu       sync.Mutex
		boxes    []idleBox
		firstErr error
		stop     atomic.Bool
	)
	create := callSpec{"sandbox_create", []byte(`{}`), false}
	began := time.Now()
	forEach(ctx, indexes(n), densityWorkers, func(ctx context.Context, _ int) {
		if stop.Load() {
			return
		}
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		t0 := time.Now()
		res, n, err := s.callTool(cctx, create.tool, create.args)
		var info struct {
			SandboxID   string `json:"sandbox_id"`
			ContainerID string `json:"container_id"`
		}
		if err == nil {
			if jerr := json.Unmarshal(res.StructuredContent, &info); jerr != nil || info.SandboxID == "" {
				err = fmt.Errorf("sandbox_create returned no sandbox_id: %s", truncate(res.text(), 200))
			}
		}
		rec.addUnlessCancelled(ctx, time.Since(t0), n, err)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("after %d sandboxes: %w", len(boxes), err)
			}
			stop.Store(true)
			return
		}
		boxes = append(boxes, idleBox{info.SandboxID, info.ContainerID})
	})
	return boxes, rec, time.Since(began), firstErr
}

// measureIdleBoxes records the median memory of the sandboxes, from their
// memory cgroups, and of the runner process in them.
func measureIdleBoxes(res *result, boxes []idleBox) {
	var usage, rss, runner []int64
	var lastErr error
	for _, b := range boxes {
		m, err := containerMemory(b.containerID)
		if err != nil {
			lastErr = err
			continue
		}
		usage, rss = append(usage, m.usage), append(rss, m.rss)
		if m.runnerRSS > 0 {
			runner = append(runner, m.runnerRSS)
		}
	}
	if len(usage) == 0 {
		res.Extra = append(res.Extra, fmt.Sprintf("sandbox memory unavailable: %v", lastErr))
		return
	}
	res.metric("sandbox_memory_usage_bytes", float64(median(usage)), "idle sandbox: cgroup usage "+mib(median(usage)))
	res.metric("sandbox_memory_rss_bytes", float64(median(rss)), "rss "+mib(median(rss)))
	if len(runner) > 0 {
		res.metric("runner_rss_bytes", float64(median(runner)), "runner VmRSS "+mib(median(runner)))
	} else {
		res.Extra = append(res.Extra, "no process named runner found in the sandboxes' cgroups")
	}
	if len(usage) < len(boxes) {
		res.Extra = append(res.Extra, fmt.Sprintf("memory read for %d of %d sandboxes (%v)", len(usage), len(boxes), lastErr))
	}
}

func median(xs []int64) int64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// sandboxMemory is one container's memory as its cgroup accounts it.
type sandboxMemory struct {
	usage     int64 // memory.usage_in_bytes: RSS plus page cache and kernel memory
	rss       int64 // memory.stat rss (anonymous memory)
	runnerRSS int64 // VmRSS of the runner process in it
}

// containerMemory reads the memory cgroup of a Docker container (cgroup
// v1 with the cgroupfs or systemd driver, or cgroup v2).
func containerMemory(containerID string) (sandboxMemory, error) {
	var m sandboxMemory
	if containerID == "" {
		return m, errors.New("sandbox_create returned no container_id")
	}
	candidates := []struct{ dir, usage, rss string }{
		{"/sys/fs/cgroup/memory/docker/" + containerID, "memory.usage_in_bytes", "rss"},
		{"/sys/fs/cgroup/memory/system.slice/docker-" + containerID + ".scope", "memory.usage_in_bytes", "rss"},
		{"/sys/fs/cgroup/system.slice/docker-" + containerID + ".scope", "memory.current", "anon"},
		{"/sys/fs/cgroup/docker/" + containerID, "memory.current", "anon"},
	}
	for _, c := range candidates {
		data, err := os.ReadFile(filepath.Join(c.dir, c.usage))
		if err != nil {
			continue
		}
		m.usage, _ = strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		if stat, err := readKeyValues(filepath.Join(c.dir, "memory.stat"), " "); err == nil {
			m.rss, _ = strconv.ParseInt(stat[c.rss], 10, 64)
		}
		m.runnerRSS = runnerRSSIn(c.dir)
		return m, nil
	}
	return m, fmt.Errorf("no memory cgroup found for container %.12s (looked in %s and the like)", containerID, candidates[0].dir)
}

// runnerRSSIn returns the VmRSS of the process named runner among the
// cgroup's processes (host pids), or 0.
func runnerRSSIn(cgroupDir string) int64 {
	data, err := os.ReadFile(filepath.Join(cgroupDir, "cgroup.procs"))
	if err != nil {
		return 0
	}
	for _, f := range strings.Fields(string(data)) {
		pid, err := strconv.Atoi(f)
		if err != nil || processName(pid) != "runner" {
			continue
		}
		if rss, _, err := processStatus(pid); err == nil {
			return rss
		}
	}
	return 0
}

// destroyIdleBoxes destroys the density scenario's sandboxes.
func destroyIdleBoxes(ctx context.Context, lr *loadRun, s *session, boxes []idleBox) {
	ctx = context.WithoutCancel(ctx)
	began := time.Now()
	var failed atomic.Int64
	forEach(ctx, boxes, densityWorkers, func(ctx context.Context, b idleBox) {
		destroy := callSpec{"sandbox_destroy", mustJSON(map[string]any{"sandbox_id": b.sandboxID}), false}
		if _, _, err := destroy.call(ctx, s); err != nil {
			failed.Add(1)
		}
	})
	fmt.Fprintf(lr.stderr, "load: density: destroyed %d sandboxes in %v (%d failed; deleting the session removes those)\n",
		len(boxes), time.Since(began).Round(time.Millisecond), failed.Load())
}
