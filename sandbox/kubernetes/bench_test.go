package kubernetes_test

import (
	"cmp"
	"slices"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/sandbox"
	"github.com/sandgate/sandgate/sandbox/kubernetes"
)

// BenchmarkCreate measures Create, from the call until the runner
// answers on the pod's IP, and Remove, until the pod is gone, under each
// RuntimeClass, with the workspace a claim (the default) and an
// emptyDir; the medians are reported as create-p50-ms and remove-p50-ms
// (SANDGATE_K8S=1 go test -run '^$' -bench . -benchtime 10x
// ./sandbox/kubernetes/, the cluster up).
func BenchmarkCreate(b *testing.B) {
	for _, rtc := range runtimeClasses {
		for _, ws := range []string{"", kubernetes.WorkspaceEmptyDir} {
			b.Run(rtc+"/workspace="+cmp.Or(ws, "claim"), func(b *testing.B) {
				env := newEnvWith(b, rtc, func(c *kubernetes.Config) { c.WorkspaceClass = ws })
				var create, remove []time.Duration
				for b.Loop() {
					start := time.Now()
					sb, err := env.p.Create(b.Context(), sandbox.Spec{Image: testImage})
					if err != nil {
						b.Fatalf("Create: %v", err)
					}
					mid := time.Now()
					if err := sb.Destroy(b.Context()); err != nil {
						b.Fatalf("Destroy: %v", err)
					}
					create, remove = append(create, mid.Sub(start)), append(remove, time.Since(mid))
				}
				b.ReportMetric(ms(median(create)), "create-p50-ms")
				b.ReportMetric(ms(median(remove)), "remove-p50-ms")
			})
		}
	}
}

// BenchmarkPause measures Pause (the pod deleted and gone, its claim and
// record kept) and Resume (a new pod on the claim, until its runner
// answers) of one sandbox, under each RuntimeClass; medians as
// pause-p50-ms and resume-p50-ms.
func BenchmarkPause(b *testing.B) {
	for _, rtc := range runtimeClasses {
		b.Run(rtc, func(b *testing.B) {
			env := newEnv(b, rtc)
			sb := env.create(b, sandbox.Spec{})
			var pause, resume []time.Duration
			for b.Loop() {
				start := time.Now()
				if err := env.p.Pause(b.Context(), sb.ID(), "bench"); err != nil {
					b.Fatalf("Pause: %v", err)
				}
				mid := time.Now()
				if _, err := env.p.Resume(b.Context(), sb.ID()); err != nil {
					b.Fatalf("Resume: %v", err)
				}
				pause, resume = append(pause, mid.Sub(start)), append(resume, time.Since(mid))
			}
			b.ReportMetric(ms(median(pause)), "pause-p50-ms")
			b.ReportMetric(ms(median(resume)), "resume-p50-ms")
		})
	}
}

// BenchmarkEcho measures one `echo hi` through the runner of a pod, on a
// connection made beforehand, under each RuntimeClass: the round trip
// from the host over the pod network, the runner's fork and exec, and
// the output events.
func BenchmarkEcho(b *testing.B) {
	for _, rtc := range runtimeClasses {
		b.Run(rtc, func(b *testing.B) {
			env := newEnv(b, rtc)
			sb := env.create(b, sandbox.Spec{})
			c, err := protocol.Dial(b.Context(), sb.Dial)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			req := protocol.ExecRequest{Argv: []string{"echo", "hi"}}
			var rtts []time.Duration
			for b.Loop() {
				start := time.Now()
				if _, err := c.Stream(b.Context(), protocol.OpExec, req, func(protocol.Event) {}); err != nil {
					b.Fatal(err)
				}
				rtts = append(rtts, time.Since(start))
			}
			b.ReportMetric(ms(median(rtts)), "echo-p50-ms")
		})
	}
}

// median returns the middle of ds.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
