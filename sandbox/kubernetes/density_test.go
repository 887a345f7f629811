package kubernetes_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandgate/sandgate/sandbox"
)

// BenchmarkPodsPerNode fills the test cluster's one node with idle
// sandboxes at the default limits and requests, four creations at a
// time, until the scheduler refuses one (or 200 run), and reports how
// many ran under each RuntimeClass. It takes minutes; run it alone:
//
//	SANDGATE_K8S=1 go test -run '^$' -bench PodsPerNode -benchtime 1x ./sandbox/kubernetes/
func BenchmarkPodsPerNode(b *testing.B) {
	for _, rtc := range runtimeClasses {
		b.Run(rtc, func(b *testing.B) {
			env := newEnv(b, rtc)
			for b.Loop() {
				b.ReportMetric(float64(fillNode(b, env, 200)), "pods")
			}
		})
	}
}

// fillNode creates sandboxes until one cannot be scheduled or limit run,
// removes them all, and returns how many ran.
func fillNode(b *testing.B, env *testEnv, limit int) int {
	var (
		mu      sync.Mutex
		made    []sandbox.Sandbox
		full    atomic.Bool
		started atomic.Int32
		wg      sync.WaitGroup
	)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		for _, sb := range made {
			_ = env.p.Remove(ctx, sb.ID())
		}
	}()
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !full.Load() && int(started.Add(1)) <= limit {
				// The provider waits up to two minutes for a pod the
				// scheduler cannot place; a shorter wait reports it.
				ctx, cancel := context.WithTimeout(b.Context(), 45*time.Second)
				sb, err := env.p.Create(ctx, sandbox.Spec{Image: testImage})
				cancel()
				if err != nil {
					if !strings.Contains(err.Error(), "Insufficient") && !strings.Contains(err.Error(), "Too many pods") && ctx.Err() == nil {
						b.Errorf("Create: %v", err)
					}
					b.Logf("stopped at: %v", err)
					full.Store(true)
					return
				}
				mu.Lock()
				made = append(made, sb)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return len(made)
}
