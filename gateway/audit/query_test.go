package audit_test

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/sandgate/sandgate/auth/identity"
	"github.com/sandgate/sandgate/gateway/audit"
)

func decode(line string) (audit.Event, error) {
	var e audit.Event
	err := json.Unmarshal([]byte(line), &e)
	return e, err
}

func TestQuery(t *testing.T) {
	t.Parallel()
	bob := identity.Identity{Issuer: alice.Issuer, Subject: "bob"}
	mallory := identity.Identity{Issuer: "https://evil.example", Subject: "alice"}
	s, _ := openSink(t)
	appendN(t, s, alice, "s1", 30)
	appendN(t, s, bob, "s2", 5)
	appendN(t, s, mallory, "s1", 5)
	appendN(t, s, alice, "s3", 30)

	tests := []struct {
		name                string
		q                   audit.Query
		wantN               int
		wantFirst, wantLast uint64 // Seq
	}{
		{"default limit", audit.Query{Issuer: alice.Issuer, Subject: "alice"}, 50, 11, 70},
		{"limit", audit.Query{Issuer: alice.Issuer, Subject: "alice", Limit: 3}, 3, 68, 70},
		{"limit above max", audit.Query{Issuer: alice.Issuer, Subject: "alice", Limit: 5000}, 60, 1, 70},
		{"session", audit.Query{Issuer: alice.Issuer, Subject: "alice", Session: "s1", Limit: 100}, 30, 1, 30},
		{"other subject", audit.Query{Issuer: alice.Issuer, Subject: "bob"}, 5, 31, 35},
		{"same subject, other issuer", audit.Query{Issuer: mallory.Issuer, Subject: "alice"}, 5, 36, 40},
		{"nobody", audit.Query{Issuer: alice.Issuer, Subject: "carol"}, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := s.Query(t.Context(), tt.q)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tt.wantN {
				t.Fatalf("got %d records, want %d", len(got), tt.wantN)
			}
			for i, e := range got {
				if e.Principal.Subject != tt.q.Subject || e.Principal.Issuer != tt.q.Issuer {
					t.Fatalf("record %d belongs to %+v", e.Seq, e.Principal)
				}
				if i > 0 && e.Seq <= got[i-1].Seq {
					t.Fatalf("records out of order: %d after %d", e.Seq, got[i-1].Seq)
				}
			}
			if tt.wantN > 0 && (got[0].Seq != tt.wantFirst || got[len(got)-1].Seq != tt.wantLast) {
				t.Errorf("seq %d..%d, want %d..%d", got[0].Seq, got[len(got)-1].Seq, tt.wantFirst, tt.wantLast)
			}
		})
	}
}

func TestQueryNeedsPrincipal(t *testing.T) {
	t.Parallel()
	s, _ := openSink(t)
	for _, q := range []audit.Query{{}, {Subject: "alice"}, {Issuer: alice.Issuer}} {
		if _, err := s.Query(t.Context(), q); !errors.Is(err, audit.ErrInvalid) {
			t.Errorf("Query(%+v) = %v, want ErrInvalid", q, err)
		}
	}
}

func TestQueryLimitCapped(t *testing.T) {
	t.Parallel()
	s, _ := openSink(t)
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() { appendN(t, s, alice, "s1", (audit.MaxQueryLimit+5)/5) })
	}
	wg.Wait()
	got, err := s.Query(t.Context(), audit.Query{Issuer: alice.Issuer, Subject: alice.Subject, Limit: 5000})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != audit.MaxQueryLimit || got[len(got)-1].Seq != audit.MaxQueryLimit+5 {
		t.Errorf("got %d records ending at seq %d, want the newest %d", len(got), got[len(got)-1].Seq, audit.MaxQueryLimit)
	}
}

// TestReadFileWhileWritten: ReadFile of a log another process is
// writing returns the whole records and leaves a last line without its
// newline (a record being written) for the next read.
func TestReadFileWhileWritten(t *testing.T) {
	t.Parallel()
	s, path := openSink(t)
	for range 2 {
		if err := s.Append(t.Context(), toolEnd(alice, "s1")); err != nil {
			t.Fatal(err)
		}
	}
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	torn := append(slices.Clone(whole), whole[:len(whole)/3]...) // a third record cut short
	if err := os.WriteFile(path, torn, 0o600); err != nil {
		t.Fatal(err)
	}
	events, err := audit.ReadFile(path)
	if err != nil || len(events) != 2 {
		t.Fatalf("ReadFile of a log with a record being written: %d records, %v; want the 2 whole ones", len(events), err)
	}
}
