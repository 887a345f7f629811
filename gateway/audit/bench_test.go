package audit_test

import (
	"testing"

	"github.com/sandgate/sandgate/gateway/audit"
)

// BenchmarkAppend measures one Append at a time: each is one write and one
// fsync, so this is the latency a tool call pays for its audit record.
func BenchmarkAppend(b *testing.B) {
	s, _ := openSink(b)
	e := toolEnd(alice, "s1")
	for b.Loop() {
		if err := s.Append(b.Context(), e); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendParallel measures concurrent appenders sharing fsyncs
// (group commit).
func BenchmarkAppendParallel(b *testing.B) {
	s, _ := openSink(b)
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		e := toolEnd(alice, "s1")
		for pb.Next() {
			if err := s.Append(b.Context(), e); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkVerify measures verification speed per record.
func BenchmarkVerify(b *testing.B) {
	s, path := openSink(b)
	appendN(b, s, alice, "s1", 1000)
	for b.Loop() {
		if rep, err := audit.VerifyFile(path); err != nil || !rep.OK() {
			b.Fatal(rep, err)
		}
	}
}
