package audit_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandgate/sandgate/gateway/audit"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata")

// TestRecordGolden pins the line format, field order, escaping and hash of
// one record: if this test fails without -update, logs written by an older
// gateway no longer verify.
func TestRecordGolden(t *testing.T) {
	t.Parallel()
	code := 1
	e := audit.Event{
		Seq: 42, ID: "0f8fad5b-d9cb-469f-a165-70867728950e",
		Time:     time.Date(2025, 11, 21, 8, 7, 6, 123456000, time.UTC),
		PrevHash: "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		Kind:     audit.KindToolEnd, Principal: alice,
		Session: "mcp-session-1", SandboxID: "sb-1", ContainerID: "c0ffee", Tool: "shell", RequestID: "7",
		ArgsDigest: audit.Digest(map[string]any{"command": "cat /etc/hosts | grep -v '#' > out && echo \"done\""}),
		Summary:    map[string]string{"command": "cat /etc/hosts | grep -v '#' > out && echo \"done\"", "cwd": "/home/sandbox", "note": "tab\there, é, \u2028"},
		Outcome:    audit.OutcomeTimeout, Error: "killed after 30s",
		ExitCode: &code, DurationMs: 30001, CPUMs: 29000, MemoryPeakBytes: 52428800, TimedOut: true,
	}
	got, err := audit.Seal(&e)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "record.golden.jsonl")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("record line changed:\ngot  %s\nwant %s", got, want)
	}
	if h := externalHash(want); h != e.Hash {
		t.Errorf("the recipe in the package comment gives %s, the record says %s", h, e.Hash)
	}
}

// externalHash follows the package comment's recipe for verifiers that
// have no canonical JSON encoder: cut the last member and hash the rest.
func externalHash(line []byte) string {
	line = bytes.TrimSuffix(line, []byte("\n"))
	i := bytes.LastIndex(line, []byte(`,"hash":"`))
	sum := sha256.Sum256(append(line[:i:i], '}'))
	return "sha256:" + hex.EncodeToString(sum[:])
}
