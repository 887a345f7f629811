package audit_test

import (
	"strings"
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

// BenchmarkDigestText measures the digest of a write_file's arguments
// holding 8 MiB of text in lines of 80 characters: the canonical
// re-encoding and the hash, which every call pays before it runs.
func BenchmarkDigestText(b *testing.B) {
	line := strings.Repeat("the quick brown fox jumps over the lazy dog; ", 2)[:79] + "\n"
	args := map[string]any{"path": "big.txt", "content": strings.Repeat(line, (8<<20)/len(line))}
	b.SetBytes(8 << 20)
	for b.Loop() {
		if audit.Digest(args) == "" {
			b.Fatal("empty digest")
		}
	}
}

// BenchmarkSeal measures the CPU part of an Append that the writer does
// not share with other records: checking and cutting the caller's event
// (prepare) and encoding and hashing it (seal). BenchmarkAppend adds the
// write and fsync.
func BenchmarkSeal(b *testing.B) {
	e := toolEnd(alice, "s1")
	for b.Loop() {
		ev := *e
		if err := audit.Prepare(&ev); err != nil {
			b.Fatal(err)
		}
		if _, err := audit.Seal(&ev); err != nil {
			b.Fatal(err)
		}
	}
}
