package audit_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/gateway/audit"
)

// writeLog creates a log of n records and returns its path and content.
func writeLog(t *testing.T, n int) (string, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, err := audit.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, s, alice, "s1", n)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, b
}

func TestOpenMovesTornTail(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		records int
		tail    func(last string) string // what a crash left after the complete lines
	}{
		{"half a record", 3, func(last string) string { return last[:len(last)/2] }},
		{"a record without its newline", 3, func(last string) string { return last }},
		{"zeros", 2, func(string) string { return string(make([]byte, 5000)) }},
		{"only a torn first record", 0, func(string) string { return `{"seq":1,"id":"` }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path, content := writeLog(t, tt.records)
			lines := readLines(t, path)
			tail := tt.tail(lines[len(lines)-1])
			if err := os.WriteFile(path, append(content, tail...), 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := audit.OpenFile(path)
			if err != nil {
				t.Fatalf("OpenFile: %v", err)
			}
			defer s.Close()
			saved, err := os.ReadFile(s.TornTail())
			if err != nil || string(saved) != tail {
				t.Fatalf("torn tail file %q holds %q (%v), want %q", s.TornTail(), saved, err, tail)
			}
			mustVerify(t, path, tt.records)
			appendN(t, s, alice, "s1", 1)
			mustVerify(t, path, tt.records+1)
		})
	}
}

func TestOpenCleanLogHasNoTornTail(t *testing.T) {
	t.Parallel()
	path, _ := writeLog(t, 2)
	s, err := audit.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.TornTail() != "" {
		t.Errorf("TornTail = %q, want none", s.TornTail())
	}
	matches, _ := filepath.Glob(path + ".torn-*")
	if len(matches) != 0 {
		t.Errorf("unexpected files %v", matches)
	}
}

func TestOpenRefusesCorruptLastRecord(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		edit func(content []byte) []byte
	}{
		{"edited field", func(b []byte) []byte { return bytes.Replace(b, []byte(`"seq":3`), []byte(`"seq":9`), 1) }},
		{"not JSON", func(b []byte) []byte { return append(b, "garbage\n"...) }},
		{"empty line", func(b []byte) []byte { return append(b, '\n') }},
		{"no newline in a long tail", func(b []byte) []byte { return append(b, strings.Repeat("x", 2<<20)...) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path, content := writeLog(t, 3)
			corrupt := tt.edit(content)
			if err := os.WriteFile(path, corrupt, 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := audit.OpenFile(path); !errors.Is(err, audit.ErrCorrupt) {
				t.Fatalf("OpenFile = %v, want ErrCorrupt", err)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, corrupt) {
				t.Error("OpenFile changed a corrupt log")
			}
		})
	}
}

func TestOpenRefusesCorruptLogWithTornTail(t *testing.T) {
	t.Parallel()
	path, content := writeLog(t, 2)
	corrupt := append(bytes.Replace(content, []byte(`"seq":2`), []byte(`"seq":7`), 1), `{"seq":3,"id`...)
	if err := os.WriteFile(path, corrupt, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := audit.OpenFile(path); !errors.Is(err, audit.ErrCorrupt) {
		t.Fatalf("OpenFile = %v, want ErrCorrupt", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, corrupt) {
		t.Error("OpenFile changed a corrupt log")
	}
}
