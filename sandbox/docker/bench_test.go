package docker_test

import (
	"testing"
	"time"

	"github.com/sandgate/sandgate/sandbox"
	"github.com/sandgate/sandgate/sandbox/docker"
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
