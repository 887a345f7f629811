package docker_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/sandbox"
	"github.com/sandgate/sandgate/sandbox/docker"
	"github.com/sandgate/sandgate/sandbox/sandboxtest"
)

// BenchmarkCreateRemove measures one sandbox's Create (until its runner
// accepts connections) and Remove, reported separately as create-ms and
// remove-ms per sandbox.
func BenchmarkCreateRemove(b *testing.B) {
	env := newEnv(b, docker.Config{})
	var create, remove time.Duration
	for b.Loop() {
		start := time.Now()
		sb, err := env.p.Create(b.Context(), sandbox.Spec{})
		if err != nil {
			b.Fatalf("Create: %v", err)
		}
		mid := time.Now()
		if err := sb.Destroy(b.Context()); err != nil {
			b.Fatalf("Destroy: %v", err)
		}
		create += mid.Sub(start)
		remove += time.Since(mid)
	}
	b.ReportMetric(float64(create.Milliseconds())/float64(b.N), "create-ms")
	b.ReportMetric(float64(remove.Milliseconds())/float64(b.N), "remove-ms")
}

// BenchmarkMemoryPause measures a pause that keeps a sandbox's memory
// (a gVisor checkpoint) and the resume that restores it, with a process
// holding 0, 256 MiB and 1 GiB of random bytes (random: no page of it is
// zero, so none is skipped). Reported per operation (pause-ms,
// resume-ms: until the runner answers again) and per GiB of the
// checkpoint's size (pause-s/GiB, resume-s/GiB), beside E2B's 4 s and
// 1 s per GiB. The sandbox's memory limit is raised to 2 GiB for the
// 1 GiB case; make bench runs it under runsc.
func BenchmarkMemoryPause(b *testing.B) {
	sandboxtest.RequireRuntime(b, "runsc")
	for _, mib := range []int{0, 256, 1024} {
		b.Run(fmt.Sprintf("held=%dMiB", mib), func(b *testing.B) {
			env := newEnv(b, docker.Config{Runtime: "runsc"})
			ctx := b.Context()
			sb := holdingMemory(b, env, mib)
			var pause, resume time.Duration
			var bytes int64
			for b.Loop() {
				start := time.Now()
				if err := env.p.PauseKeepingMemory(ctx, sb.ID(), "bench"); err != nil {
					b.Fatal(err)
				}
				mid := time.Now()
				if infos, err := env.p.List(ctx, sandbox.Filter{ID: sb.ID()}); err == nil && len(infos) == 1 {
					bytes += infos[0].DiskBytes
				}
				again, err := env.p.Resume(ctx, sb.ID())
				if err != nil || !again.Info().MemoryKept {
					b.Fatalf("Resume: %v (memory restored: %v)", err, err == nil && again.Info().MemoryKept)
				}
				resume += time.Since(mid)
				pause += mid.Sub(start)
				sb = again
			}
			gib := float64(bytes) / float64(b.N) / (1 << 30)
			b.ReportMetric(float64(pause.Milliseconds())/float64(b.N), "pause-ms")
			b.ReportMetric(float64(resume.Milliseconds())/float64(b.N), "resume-ms")
			b.ReportMetric(float64(bytes)/float64(b.N)/(1<<20), "paused-MiB")
			if mib >= 256 {
				b.ReportMetric(pause.Seconds()/float64(b.N)/gib, "pause-s/GiB")
				b.ReportMetric(resume.Seconds()/float64(b.N)/gib, "resume-s/GiB")
			}
		})
	}
}

// holdingMemory creates a sandbox of env with a 2 GiB memory limit and,
// for mib > 0, a process in it holding mib MiB of random bytes (no page
// of them zero, so none is skipped by a checkpoint).
func holdingMemory(b *testing.B, env *testEnv, mib int) sandbox.Sandbox {
	b.Helper()
	sb, err := env.p.Create(b.Context(), sandbox.Spec{Limits: sandbox.Limits{MemoryBytes: 2 << 30}})
	if err != nil {
		b.Fatal(err)
	}
	if mib > 0 {
		hold := fmt.Sprintf(`python3 -c "import os,time; b=os.urandom(%d<<20); open('/tmp/held','w').write('ok'); time.sleep(86400)"`, mib)
		startProcess(b, sb, hold)
		waitForFile(b, sb, "/tmp/held")
	}
	return sb
}

// startProcess starts command in the background in sb.
func startProcess(b *testing.B, sb sandbox.Sandbox, command string) {
	b.Helper()
	c, err := protocol.Dial(b.Context(), sb.Dial)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if err := c.Call(b.Context(), protocol.OpProcessStart, protocol.ExecRequest{Command: command}, nil); err != nil {
		b.Fatal(err)
	}
}

// waitForFile waits, a minute at most, until path exists in sb.
func waitForFile(b *testing.B, sb sandbox.Sandbox, path string) {
	b.Helper()
	c, err := protocol.Dial(b.Context(), sb.Dial)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	for range 600 {
		var fi protocol.FileInfo
		if err := c.Call(b.Context(), protocol.OpFileStat, protocol.PathRequest{Path: path}, &fi); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.Fatalf("%s did not appear within a minute", path)
}

// BenchmarkMemoryFork measures a snapshot with memory of a running
// sandbox (checkpoint, copies, restore of the source: snapshot-ms) and a
// sandbox made from it, until its restored runner answers (fork-ms),
// under gVisor, with a process holding 0 and 256 MiB of random bytes.
func BenchmarkMemoryFork(b *testing.B) {
	sandboxtest.RequireRuntime(b, "runsc")
	for _, mib := range []int{0, 256} {
		b.Run(fmt.Sprintf("held=%dMiB", mib), func(b *testing.B) {
			env := newEnv(b, docker.Config{Runtime: "runsc"})
			ctx := b.Context()
			sb := holdingMemory(b, env, mib)
			var snapshot, fork time.Duration
			for i := 0; b.Loop(); i++ {
				snap := fmt.Sprintf("bench%d%s", i, randomHex(4))
				start := time.Now()
				if _, err := env.p.SnapshotWithMemory(ctx, sb.ID(), snap); err != nil {
					b.Fatal(err)
				}
				mid := time.Now()
				forked, err := env.p.Create(ctx, sandbox.Spec{Snapshot: snap, Limits: sandbox.Limits{MemoryBytes: 2 << 30}})
				if err != nil || !forked.Info().MemoryKept {
					b.Fatalf("Create from the snapshot: %v (memory restored: %v)", err, err == nil && forked.Info().MemoryKept)
				}
				fork += time.Since(mid)
				snapshot += mid.Sub(start)
				b.StopTimer()
				_ = forked.Destroy(ctx)
				_ = env.p.DeleteSnapshot(ctx, snap)
				b.StartTimer()
			}
			b.ReportMetric(float64(snapshot.Milliseconds())/float64(b.N), "snapshot-ms")
			b.ReportMetric(float64(fork.Milliseconds())/float64(b.N), "fork-ms")
		})
	}
}
