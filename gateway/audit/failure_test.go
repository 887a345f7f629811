package audit_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sandgate/sandgate/gateway/audit"
)

func TestWriteFailureRollsBack(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		op   string
		err  error
	}{
		{"partial write, disk full", "write", syscall.ENOSPC},
		{"read-only file system", "write", syscall.EROFS},
		{"fsync fails", "sync", syscall.EIO},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, path := openSink(t)
			appendN(t, s, alice, "s1", 2)
			audit.SetFault(s, tt.op, tt.err)
			for range 2 {
				e := toolEnd(alice, "s1")
				err := s.Append(t.Context(), e)
				if !errors.Is(err, audit.ErrUnavailable) || !errors.Is(err, tt.err) {
					t.Fatalf("Append = %v, want ErrUnavailable wrapping %v", err, tt.err)
				}
				if e.Seq != 0 || e.Hash != "" {
					t.Errorf("failed Append filled seq %d hash %q", e.Seq, e.Hash)
				}
				mustVerify(t, path, 2)
			}
			audit.SetFault(s, tt.op, nil)
			e := toolEnd(alice, "s1")
			if err := s.Append(t.Context(), e); err != nil {
				t.Fatalf("Append after the fault cleared: %v", err)
			}
			if e.Seq != 3 {
				t.Errorf("seq after recovery = %d, want 3", e.Seq)
			}
			mustVerify(t, path, 3)
		})
	}
}

// If the rollback fails too, the sink refuses everything until reopened,
// and OpenFile then repairs the log.
func TestFailedRollbackBreaksSink(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, err := audit.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, s, alice, "s1", 2)
	audit.SetFault(s, "write", syscall.EIO)
	audit.SetFault(s, "truncate", syscall.EIO)
	if err := s.Append(t.Context(), toolEnd(alice, "s1")); !errors.Is(err, audit.ErrUnavailable) {
		t.Fatalf("Append = %v, want ErrUnavailable", err)
	}
	audit.SetFault(s, "write", nil)
	audit.SetFault(s, "truncate", nil)
	if err := s.Append(t.Context(), toolEnd(alice, "s1")); !errors.Is(err, audit.ErrUnavailable) {
		t.Fatalf("Append on a broken sink = %v, want ErrUnavailable", err)
	}
	s.Close()

	s, err = audit.OpenFile(path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	if s.TornTail() == "" {
		t.Error("reopen found no torn tail")
	}
	mustVerify(t, path, 2)
	appendN(t, s, alice, "s1", 1)
	mustVerify(t, path, 3)
}

// TestDiskFull fills a real tmpfs. It needs root (to mount) and skips
// otherwise.
func TestDiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	path := filepath.Join(dir, "audit.jsonl")
	s, err := audit.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	appendN(t, s, alice, "s1", 2)
	filler := filepath.Join(dir, "filler")
	fillDisk(t, filler)

	big := map[string]string{}
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"} {
		big[k] = strings.Repeat(k, 200)
	}
	n := 2
	for ; n < 100; n++ {
		e := &audit.Event{Kind: audit.KindToolStart, Principal: alice, Summary: big}
		err = s.Append(t.Context(), e)
		if err != nil {
			break
		}
	}
	if !errors.Is(err, audit.ErrUnavailable) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Append on a full disk = %v, want ErrUnavailable wrapping ENOSPC", err)
	}
	t.Logf("append %d failed: %v", n+1, err)
	mustVerify(t, path, n)
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	appendN(t, s, alice, "s1", 1)
	mustVerify(t, path, n+1)
}

func fillDisk(t *testing.T, name string) {
	t.Helper()
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 1024)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}
