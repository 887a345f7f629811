package gateway_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dockerapi "github.com/docker/docker/client"

	"github.com/sandgate/sandgate/gateway"
	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/runner/process"
	"github.com/sandgate/sandgate/sandbox"
)

const poolReady = `sandgate_pool_ready{image="` + testImage + `"}`

// TestWarmPool: a session's first call takes a ready sandbox from the
// pool, which refills; concurrent sessions never share one; a claimed
// sandbox has the limits, owner and audit records of a fresh one; and
// after a crash, the restarted gateway adopts a claimed sessionless
// sandbox for its owner and removes everything else the pool left.
func TestWarmPool(t *testing.T) {
	t.Parallel()
	tg := startGateway(t, func(c *gateway.Config) { c.Pool = map[string]int{testImage: 2} })
	waitMetric(t, tg, poolReady, 2)
	// Each ready sandbox has its claim record reserved, empty, so that a
	// claim only writes it.
	reserved, _ := filepath.Glob(filepath.Join(tg.VarDir, "claims", "*.json"))
	for _, name := range reserved {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() != 0 {
			t.Fatalf("reserved claim record %s holds %d bytes; want it empty", name, fi.Size())
		}
	}
	if len(reserved) != 2 {
		t.Fatalf("claim records of a full pool of 2: %v, want 2 reserved", reserved)
	}
	// The pool warmed each runner up with a command before calling it
	// ready: the thread a runner forks user processes from, niced to
	// process.UserNice, exists only once it has started one.
	for _, ct := range tg.containers(t) {
		if !runnerStartedACommand(t, ct.ContainerID) {
			t.Errorf("pooled container %s: its runner has not started a command yet", ct.ContainerID)
		}
	}

	c := legacyClient(t, tg.URL)
	mustOK(t, "run_shell", call(t, c, "run_shell", map[string]any{"command": "echo warm > /workspace/f"}))
	m := scrape(t, tg)
	if m[`sandgate_pool_claims_total{result="hit"}`] != 1 || m[`sandgate_sandbox_starts_total{outcome="ok",source="pool"}`] != 1 {
		t.Fatalf("first call of a session with a full pool: hits %v, pool starts %v; want 1 and 1",
			m[`sandgate_pool_claims_total{result="hit"}`], m[`sandgate_sandbox_starts_total{outcome="ok",source="pool"}`])
	}
	pooled := structuredAs[map[string]any](t, mustOK(t, "sandbox_info", call(t, c, "sandbox_info", nil)))
	pooledID := pooled["sandbox_id"].(string)
	// The gateway reads a claimed sandbox's workspace from its own disk,
	// as it does a fresh one's.
	if got := text(mustOK(t, "read_file", call(t, c, "read_file", map[string]any{"path": "f"}))); got != "warm\n" {
		t.Errorf("read_file in the claimed sandbox: %q, want %q", got, "warm\n")
	}
	if got := scrape(t, tg)[`sandgate_file_reads_total{via="host"}`]; got != 1 {
		t.Errorf("reads served from the host after one read_file in a claimed sandbox: %v, want 1", got)
	}
	claim := readClaim(t, tg, pooledID)
	if claim["owner"] != gateway.LocalPrincipal.Digest() || claim["session"] != c.GetSessionId() || claim["tenant"] != "local" {
		t.Fatalf("claim record %v: want the session's owner, session and tenant", claim)
	}
	var created *audit.Event
	for _, e := range auditRecords(t, tg.AuditPath) {
		if e.Kind == audit.KindSandboxCreate && e.SandboxID == pooledID {
			created = &e
		}
	}
	if created == nil || created.Principal.Subject != "local" || created.Session != c.GetSessionId() || created.ContainerID != pooled["container_id"] {
		t.Fatalf("sandbox.create record of the claimed sandbox: %+v", created)
	}
	waitMetric(t, tg, poolReady, 2)

	// Four sessions at once against a pool of two: two take pooled
	// sandboxes, two get fresh ones, and no two share a container.
	var wg sync.WaitGroup
	ids := make([]string, 4)
	for i := range ids {
		wg.Go(func() {
			s := legacyClient(t, tg.URL)
			if res, err := callErr(t.Context(), s, "run_shell", map[string]any{"command": "true"}); err != nil || res.IsError {
				t.Errorf("session %d: first call: %v %v", i, err, res)
				return
			}
			res, err := callErr(t.Context(), s, "sandbox_info", nil)
			if err != nil || res.IsError {
				t.Errorf("session %d: %v %v", i, err, res)
				return
			}
			ids[i] = structuredAs[map[string]any](t, res)["container_id"].(string)
		})
	}
	wg.Wait()
	seen := map[string]bool{pooled["container_id"].(string): true}
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("two sessions got container %s: %v", id, ids)
		}
		seen[id] = true
	}
	m = scrape(t, tg)
	if hits, misses := m[`sandgate_pool_claims_total{result="hit"}`], m[`sandgate_pool_claims_total{result="miss"}`]; hits+misses != 5 || hits < 3 {
		t.Fatalf("after 5 first calls with pools of 2: %v hits, %v misses; want 5 claims, at least 3 hits", hits, misses)
	}
	sameHostConfig(t, ids)

	// A crash and restart keep every claimed sandbox for its owner: the
	// sessionless one, and the sessions' (adopted without their
	// sessions, paused when the first sweep finds them idle); the ready
	// ones nobody claimed are removed.
	waitMetric(t, tg, poolReady, 2)
	mc := modernClient(t, tg.URL)
	id := structuredAs[map[string]any](t, mustOK(t, "sandbox_create", call(t, mc, "sandbox_create", nil)))["sandbox_id"].(string)
	if readClaim(t, tg, id)["session"] != nil {
		t.Fatalf("the sessionless sandbox's claim names a session")
	}
	mustOK(t, "write_file", call(t, mc, "write_file", map[string]any{"sandbox_id": id, "path": "kept.txt", "content": "kept"}))
	tg.crash()
	tg2 := restart(t, tg)
	left := tg2.containers(t)
	if len(left) != 6 || !slices.ContainsFunc(left, func(info sandbox.Info) bool { return info.ID == id }) {
		t.Fatalf("after the restart: containers %+v, want the 5 sessions' claimed sandboxes and the sessionless %s", left, id)
	}
	mc2 := modernClient(t, tg2.URL)
	if got := text(mustOK(t, "read_file", call(t, mc2, "read_file", map[string]any{"sandbox_id": id, "path": "kept.txt"}))); got != "kept" {
		t.Fatalf("the adopted sandbox's file: %q", got)
	}
	info := structuredAs[map[string]any](t, mustOK(t, "sandbox_info", call(t, mc2, "sandbox_info", map[string]any{"sandbox_id": id})))
	if exp, _ := time.Parse(time.RFC3339Nano, info["expires_at"].(string)); !exp.Equal(readClaimTime(t, tg, id)) {
		t.Fatalf("adopted sandbox expires %v, its claim says %v", exp, readClaimTime(t, tg, id))
	}
	records, _ := filepath.Glob(filepath.Join(tg.VarDir, "claims", "*.json"))
	for _, r := range records {
		rid := strings.TrimSuffix(filepath.Base(r), ".json")
		if !slices.ContainsFunc(left, func(info sandbox.Info) bool { return info.ID == rid }) {
			t.Errorf("claim record %s after the restart, of no sandbox kept", r)
		}
	}
	if !slices.Contains(records, filepath.Join(tg.VarDir, "claims", id+".json")) {
		t.Errorf("claim records after the restart: %v; want %s's kept", records, id)
	}
}

// waitMetric waits until tg's metric name reads want.
func waitMetric(t *testing.T, tg *testGateway, name string, want float64) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	var got float64
	for time.Now().Before(deadline) {
		if got = scrape(t, tg)[name]; got == want {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s = %v after 2 minutes, want %v", name, got, want)
}

func readClaim(t *testing.T, tg *testGateway, id string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(tg.VarDir, "claims", id+".json"))
	if err != nil {
		t.Fatalf("claim record of %s: %v", id, err)
	}
	var c map[string]any
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// runnerStartedACommand reports whether the runner of container id,
// seen from the host, has a thread at process.UserNice: its forking
// thread, started with its first command.
func runnerStartedACommand(t *testing.T, containerID string) bool {
	t.Helper()
	pids, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range pids {
		comm, _ := os.ReadFile(dir + "/comm")
		cgroup, _ := os.ReadFile(dir + "/cgroup")
		if strings.TrimSpace(string(comm)) != "runner" || !strings.Contains(string(cgroup), containerID) {
			continue
		}
		threads, _ := filepath.Glob(dir + "/task/[0-9]*/stat")
		for _, th := range threads {
			stat, _ := os.ReadFile(th)
			_, after, _ := strings.Cut(string(stat), ") ")
			// after starts at field 3 (state); nice is field 19.
			if f := strings.Fields(after); len(f) > 16 && f[16] == strconv.Itoa(process.UserNice) {
				return true
			}
		}
		return false
	}
	t.Fatalf("no runner process of container %s on this host", containerID)
	return false
}

func readClaimTime(t *testing.T, tg *testGateway, id string) time.Time {
	t.Helper()
	exp, err := time.Parse(time.RFC3339Nano, readClaim(t, tg, id)["expires_at"].(string))
	if err != nil {
		t.Fatal(err)
	}
	return exp
}

// sameHostConfig checks that the containers were made with the same
// limits and hardening, pooled or not.
func sameHostConfig(t *testing.T, containerIDs []string) {
	t.Helper()
	cli, err := dockerapi.NewClientWithOpts(dockerapi.FromEnv, dockerapi.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	var first string
	for _, id := range containerIDs {
		c, err := cli.ContainerInspect(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		h := c.HostConfig
		got := fmt.Sprint(h.Memory, h.MemorySwap, h.NanoCPUs, *h.PidsLimit, h.ReadonlyRootfs, h.CapDrop, h.CapAdd, h.SecurityOpt,
			h.NetworkMode, h.Tmpfs, h.Ulimits, h.Runtime, c.Config.User, c.Config.Image)
		if first == "" {
			first = got
		} else if !reflect.DeepEqual(got, first) {
			t.Fatalf("container %s differs from the others:\n%s\n%s", id, got, first)
		}
	}
}

// TestWarmPoolBacksOffFailures: a pool whose image cannot be started
// retries every few seconds, not as fast as it fails, and the gateway
// still serves sessions with fresh sandboxes of its default image.
func TestWarmPoolBacksOffFailures(t *testing.T) {
	t.Parallel()
	const missing = "sandgate/no-such-image:latest"
	tg := startGateway(t, func(c *gateway.Config) {
		c.Images = append(c.Images, missing)
		c.Pool = map[string]int{missing: 3}
	})
	const failed = "warm pool: make a sandbox; retrying later"
	for deadline := time.Now().Add(time.Minute); !strings.Contains(tg.Logs.String(), failed); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no failed pool creation logged within a minute")
		}
	}
	// The pause after a failure is 5 s: in the next 3, only the other
	// creation already in flight may fail too.
	time.Sleep(3 * time.Second)
	if n := strings.Count(tg.Logs.String(), failed); n > 2 {
		t.Fatalf("%d failed pool creations within 3 s of the first; want at most 2 (two in flight, then a pause)", n)
	}
	c := legacyClient(t, tg.URL)
	mustOK(t, "run_shell", call(t, c, "run_shell", map[string]any{"command": "true"}))
}

// TestWarmPoolShutdownWhileFilling: a gateway shut down while its pool
// is making sandboxes waits for those creations, so nothing they made
// (container, mounted workspace, socket dir) outlives it.
func TestWarmPoolShutdownWhileFilling(t *testing.T) {
	t.Parallel()
	tg := startGateway(t, func(c *gateway.Config) { c.Pool = map[string]int{testImage: 4} })
	wsDir := filepath.Join(tg.VarDir, "workspaces")
	deadline := time.Now().Add(time.Minute)
	for {
		// A workspace directory exists from the first step of a creation
		// on: the pool is mid-way through one.
		if entries, _ := os.ReadDir(wsDir); len(entries) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the pool started no creation within a minute")
		}
		time.Sleep(5 * time.Millisecond)
	}
	tg.Close()
	if left := tg.containers(t); len(left) != 0 {
		t.Fatalf("containers left after shutdown: %+v", left)
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(mounts)) {
		if strings.Contains(line, " "+wsDir+"/") {
			t.Fatalf("a workspace is still mounted after shutdown: %s", line)
		}
	}
	if entries, _ := os.ReadDir(wsDir); len(entries) != 0 {
		t.Fatalf("workspaces left after shutdown: %v", entries)
	}
}

// TestWarmPoolEgress: a claimed sandbox arrives with the runner connection
// the pool opened while it had no owner; its egress is still the owner's,
// under the owner's allowlist, and audited as the owner's.
func TestWarmPoolEgress(t *testing.T) {
	t.Parallel()
	world := newEgressWorld(t)
	tg := startGateway(t, func(c *gateway.Config) {
		world.configure(t, c, egressCeiling...)
		c.Pool = map[string]int{testImage: 1}
	})
	waitMetric(t, tg, poolReady, 1)
	c := legacyClient(t, tg.URL)
	since := len(auditRecords(t, tg.AuditPath))
	r, _ := shell(t, c, "curl -sS http://allowed.test/hello; curl -sS -o /dev/null -w ' %{http_code}' http://denied.test/", nil)
	if m := scrape(t, tg); m[`sandgate_pool_claims_total{result="hit"}`] != 1 {
		t.Fatalf("the session's first call did not claim the pooled sandbox: %v hits", m[`sandgate_pool_claims_total{result="hit"}`])
	}
	if !strings.Contains(r.Stdout, "hello from allowed.test over http") || !strings.HasSuffix(strings.TrimSpace(r.Stdout), " 403") {
		t.Fatalf("egress from a claimed sandbox: stdout %q, stderr %q; want allowed.test's answer, then 403 for denied.test", r.Stdout, r.Stderr)
	}
	id := structuredAs[map[string]any](t, mustOK(t, "sandbox_info", call(t, c, "sandbox_info", nil)))["sandbox_id"]
	ev := waitEgress(t, tg, since, "allowed.test:80")
	if ev.Outcome != audit.OutcomeOK || ev.SandboxID != id || ev.Principal.Subject != "local" {
		t.Fatalf("egress record of the claimed sandbox: %+v; want ok, sandbox %v, its owner's", ev, id)
	}
}
