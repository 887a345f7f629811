package audit_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandgate/sandgate/gateway/audit"
)

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestAppendVerifyRoundTrip(t *testing.T) {
	t.Parallel()
	code := 137
	events := []*audit.Event{
		{Kind: audit.KindSessionStart, Principal: alice, Session: "s1"},
		{Kind: audit.KindSandboxCreate, Principal: alice, Session: "s1", SandboxID: "sb-1", ContainerID: "c0ffee"},
		{Kind: audit.KindToolStart, Principal: alice, Session: "s1", Tool: "python", Summary: map[string]string{"language": "python", "code": `print("<&>")`}},
		{Kind: audit.KindToolEnd, Principal: alice, Session: "s1", Tool: "python", Outcome: audit.OutcomeOOM, ExitCode: &code, OOMKilled: true},
		{Kind: audit.KindToolDenied, Principal: alice, Tool: "browser", Outcome: audit.OutcomeDenied, DenyReason: "missing scope tools:browser"},
		{Kind: audit.KindSandboxDestroy, SandboxID: "sb-1"},
		{Kind: audit.KindSessionEnd, Principal: alice, Session: "s1", Error: "idle timeout\n"},
	}
	s, path := openSink(t)
	before := time.Now().UTC()
	prev := ""
	for i, e := range events {
		if err := s.Append(t.Context(), e); err != nil {
			t.Fatalf("Append %s: %v", e.Kind, err)
		}
		if e.Seq != uint64(i+1) || e.PrevHash != prev || !strings.HasPrefix(e.Hash, "sha256:") || !uuidV4.MatchString(e.ID) {
			t.Errorf("event %d: seq %d prev %q hash %q id %q", i, e.Seq, e.PrevHash, e.Hash, e.ID)
		}
		if e.Time.Location() != time.UTC || e.Time.Before(before) {
			t.Errorf("event %d: time %v", i, e.Time)
		}
		prev = e.Hash
	}
	rep := mustVerify(t, path, len(events))
	if rep.LastHash != prev {
		t.Errorf("LastHash = %q, want %q", rep.LastHash, prev)
	}
}

func TestAppendRejects(t *testing.T) {
	t.Parallel()
	huge := map[string]string{}
	for i := range 400 {
		huge[strings.Repeat("k", 10)+string(rune('a'+i%26))+strings.Repeat("x", i)] = strings.Repeat("v", 150)
	}
	tests := []struct {
		name string
		e    *audit.Event
	}{
		{"nil", nil},
		{"no kind", &audit.Event{Principal: alice}},
		{"unknown kind", &audit.Event{Kind: "tool.maybe"}},
		{"unknown outcome", &audit.Event{Kind: audit.KindToolEnd, Outcome: "fine"}},
		{"too large", &audit.Event{Kind: audit.KindToolStart, Summary: huge}},
	}
	s, path := openSink(t)
	appendN(t, s, alice, "s1", 1)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := s.Append(t.Context(), tt.e); !errors.Is(err, audit.ErrInvalid) {
				t.Fatalf("Append = %v, want ErrInvalid", err)
			}
		})
	}
	appendN(t, s, alice, "s1", 1)
	mustVerify(t, path, 2)
}

func TestAppendCutsLongValues(t *testing.T) {
	t.Parallel()
	s, _ := openSink(t)
	long := strings.Repeat("é", 300)
	summary := map[string]string{"command": long, "language": "sh"}
	e := &audit.Event{Kind: audit.KindToolStart, Summary: summary, Error: strings.Repeat("x", 5000)}
	if err := s.Append(t.Context(), e); err != nil {
		t.Fatal(err)
	}
	if got := []rune(e.Summary["command"]); len(got) != 200 || got[199] != '…' {
		t.Errorf("recorded command has %d runes, ends %q", len(got), got[len(got)-1])
	}
	if summary["command"] != long {
		t.Error("Append modified the caller's summary map")
	}
	if n := len([]rune(e.Error)); n != 1000 {
		t.Errorf("recorded error has %d runes, want 1000", n)
	}
}

func TestConcurrentAppend(t *testing.T) {
	t.Parallel()
	const writers, each = 8, 100
	s, path := openSink(t)
	seqs := make([][]uint64, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for range each {
				e := toolEnd(alice, "s1")
				if err := s.Append(context.Background(), e); err != nil {
					t.Errorf("Append: %v", err)
					return
				}
				seqs[w] = append(seqs[w], e.Seq)
			}
		})
	}
	wg.Wait()
	seen := map[uint64]bool{}
	for w, got := range seqs {
		for i, q := range got {
			if seen[q] || (i > 0 && q <= got[i-1]) {
				t.Fatalf("writer %d: seq %d duplicated or not increasing", w, q)
			}
			seen[q] = true
		}
	}
	mustVerify(t, path, writers*each)
}

func TestReopenContinuesChain(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	for round := 1; round <= 3; round++ {
		s, err := audit.OpenFile(path)
		if err != nil {
			t.Fatalf("round %d: OpenFile: %v", round, err)
		}
		e := toolEnd(alice, "s1")
		if err := s.Append(t.Context(), e); err != nil {
			t.Fatal(err)
		}
		appendN(t, s, alice, "s1", 1)
		if want := uint64(2*round - 1); e.Seq != want {
			t.Errorf("round %d: first seq %d, want %d", round, e.Seq, want)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	mustVerify(t, path, 6)
}

func TestOpenFile(t *testing.T) {
	t.Parallel()
	s, path := openSink(t)
	for name, want := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700 | os.ModeDir} {
		st, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode() != want {
			t.Errorf("%s: mode %v, want %v", name, st.Mode(), want)
		}
	}
	if _, err := audit.OpenFile(path); !errors.Is(err, audit.ErrUnavailable) {
		t.Errorf("second OpenFile of a locked log = %v, want ErrUnavailable", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(t.Context(), toolEnd(alice, "s1")); !errors.Is(err, audit.ErrClosed) || !errors.Is(err, audit.ErrUnavailable) {
		t.Errorf("Append after Close = %v, want ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

func TestAppendCanceled(t *testing.T) {
	t.Parallel()
	s, path := openSink(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.Append(ctx, toolEnd(alice, "s1")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Append = %v, want context.Canceled", err)
	}
	mustVerify(t, path, 0)
}
