package audit_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/sandgate/sandgate/gateway/audit"
)

func TestVerifyDetectsTampering(t *testing.T) {
	t.Parallel()
	path, _ := writeLog(t, 5)
	orig := readLines(t, path)
	tests := []struct {
		name       string
		edit       func(l []string) []string
		wantBroken int
		wantReason string
	}{
		{"untouched", func(l []string) []string { return l }, 0, ""},
		{"field changed", func(l []string) []string {
			l[2] = strings.Replace(l[2], `"tool":"shell"`, `"tool":"shelf"`, 1)
			return l
		}, 3, "hash mismatch"},
		{"field changed and hash recomputed", func(l []string) []string {
			l[2] = reseal(t, strings.Replace(l[2], `"duration_ms":12`, `"duration_ms":1`, 1))
			return l
		}, 4, "prev_hash"},
		{"member added", func(l []string) []string {
			l[1] = strings.Replace(l[1], `"kind"`, `"note":"x","kind"`, 1)
			return l
		}, 2, "canonical"},
		{"whitespace added", func(l []string) []string { l[1] = strings.Replace(l[1], `,"kind"`, `, "kind"`, 1); return l }, 2, "canonical"},
		{"first deleted", func(l []string) []string { return l[1:] }, 1, "seq 2 follows seq 0"},
		{"middle deleted", func(l []string) []string { return append(l[:2:2], l[3:]...) }, 3, "seq 4 follows seq 2"},
		{"reordered", func(l []string) []string { l[1], l[2] = l[2], l[1]; return l }, 2, "seq 3 follows seq 1"},
		{"duplicated", func(l []string) []string { return append(l[:3:3], l[2:]...) }, 4, "seq 3 follows seq 3"},
		{"blank line", func(l []string) []string { return append(l[:3:3], append([]string{""}, l[3:]...)...) }, 4, "not a JSON record"},
		{"prev_hash cleared", func(l []string) []string {
			l[0] = reseal(t, l[0])
			l[3] = reseal(t, strings.Replace(l[3], `"prev_hash":"sha256:`, `"prev_hash":"x`, 1))
			return l
		}, 4, "prev_hash"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			content := strings.Join(tt.edit(append([]string(nil), orig...)), "\n") + "\n"
			rep, err := audit.Verify(strings.NewReader(content))
			if err != nil {
				t.Fatal(err)
			}
			if rep.FirstBroken != tt.wantBroken || !strings.Contains(rep.Reason, tt.wantReason) {
				t.Fatalf("Verify = %+v, want line %d with reason containing %q", rep, tt.wantBroken, tt.wantReason)
			}
			if tt.wantBroken > 0 && rep.Records != tt.wantBroken-1 {
				t.Errorf("Records = %d, want %d", rep.Records, tt.wantBroken-1)
			}
		})
	}
}

// reseal recomputes the hash of an edited line, as a forger would.
func reseal(t *testing.T, line string) string {
	t.Helper()
	e, err := decode(line)
	if err != nil {
		t.Fatal(err)
	}
	b, err := audit.Seal(&e)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(string(b), "\n")
}

func TestVerifyTornAndOversizedLines(t *testing.T) {
	t.Parallel()
	path, content := writeLog(t, 2)
	lines := readLines(t, path)
	tests := []struct {
		name       string
		input      string
		wantBroken int
		wantReason string
	}{
		{"empty", "", 0, ""},
		{"torn last line", string(content) + lines[1][:40], 3, "incomplete"},
		{"record without newline", strings.TrimSuffix(string(content), "\n"), 2, "incomplete"},
		{"oversized line", string(content) + strings.Repeat("x", audit.MaxRecordSize) + "\n", 3, "longer than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rep, err := audit.Verify(strings.NewReader(tt.input))
			if err != nil {
				t.Fatal(err)
			}
			if rep.FirstBroken != tt.wantBroken || !strings.Contains(rep.Reason, tt.wantReason) {
				t.Fatalf("Verify = %+v, want line %d with reason containing %q", rep, tt.wantBroken, tt.wantReason)
			}
		})
	}
}

func TestVerifyReadError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	if _, err := audit.Verify(iotest.ErrReader(boom)); !errors.Is(err, boom) {
		t.Errorf("Verify = %v, want %v", err, boom)
	}
	if _, err := audit.VerifyFile(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("VerifyFile of a missing file = %v", err)
	}
}
