package audit_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/auth/identity"
	"github.com/sandgate/sandgate/gateway/audit"
)

var alice = identity.Identity{Issuer: "https://idp.example", Subject: "alice", Tenant: "acme", ClientID: "cli", Scopes: []string{"tools:call"}}

// openSink opens a sink in a fresh directory and closes it at cleanup.
func openSink(t testing.TB) (*audit.FileSink, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit", "audit.jsonl")
	s, err := audit.OpenFile(path)
	if err != nil {
		t.Fatalf("OpenFile: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

// toolEnd returns a typical tool.end event.
func toolEnd(p identity.Identity, session string) *audit.Event {
	code := 0
	return &audit.Event{
		Kind: audit.KindToolEnd, Principal: p, Session: session, SandboxID: "sb-1",
		Tool: "shell", RequestID: "7", ArgsDigest: audit.Digest(map[string]any{"command": "ls"}),
		Summary: map[string]string{"command": "ls -la"}, Outcome: audit.OutcomeOK,
		ExitCode: &code, DurationMs: 12, CPUMs: 3, MemoryPeakBytes: 1 << 20,
	}
}

// appendN appends n tool.end events for p and fails the test on error.
func appendN(t testing.TB, s *audit.FileSink, p identity.Identity, session string, n int) {
	t.Helper()
	for range n {
		if err := s.Append(context.Background(), toolEnd(p, session)); err != nil {
			t.Fatalf("Append: %v", err)
		}
	}
}

// mustVerify fails the test unless the file at path verifies with want
// records.
func mustVerify(t testing.TB, path string, want int) audit.Report {
	t.Helper()
	rep, err := audit.VerifyFile(path)
	if err != nil {
		t.Fatalf("VerifyFile: %v", err)
	}
	if !rep.OK() || rep.Records != want {
		t.Fatalf("VerifyFile = %+v, want OK with %d records", rep, want)
	}
	return rep
}

// readLines returns the lines of the file at path, without newlines.
func readLines(t testing.TB, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}
