//go:build linux

package files_test

import (
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sandgate/sandgate/runner/files"
	"github.com/sandgate/sandgate/runner/protocol"
)

// fsizeChildEnv names the workspace for the child process of
// TestWriteFailureLeavesNoTempFile.
const fsizeChildEnv = "SANDGATE_FILES_FSIZE_WORKSPACE"

// TestWriteFailureLeavesNoTempFile makes a write fail halfway, as a full
// disk would, and checks that the old file is intact and no temporary file
// remains; and that a failed append takes back what it added. RLIMIT_FSIZE gives a real EFBIG from write(2) without needing a
// tmpfs mount; it applies to the whole process, so the write runs in a
// child copy of the test binary.
func TestWriteFailureLeavesNoTempFile(t *testing.T) {
	if ws := os.Getenv(fsizeChildEnv); ws != "" {
		writeUnderFileSizeLimit(t, ws)
		return
	}
	t.Parallel()
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{"keep.txt": "old"})
	cmd := exec.Command(os.Args[0], "-test.run=^TestWriteFailureLeavesNoTempFile$", "-test.v")
	cmd.Env = append(os.Environ(), fsizeChildEnv+"="+ws)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if got := readFile(t, filepath.Join(ws, "keep.txt")); got != "old" {
		t.Errorf("keep.txt = %q after a failed write, want the old content", got)
	}
	if left := tempFiles(t, ws); len(left) > 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
	if _, err := os.Lstat(filepath.Join(ws, "new.txt")); !os.IsNotExist(err) {
		t.Errorf("a failed append left the file it created (%v)", err)
	}
}

// writeUnderFileSizeLimit runs in the child: it writes more than the file
// size limit allows and expects CodeTooLarge.
func writeUnderFileSizeLimit(t *testing.T, ws string) {
	// Without this the kernel kills the process with SIGXFSZ instead of
	// failing the write.
	signal.Ignore(syscall.SIGXFSZ)
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	limited := syscall.Rlimit{Cur: 4096, Max: old.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &limited); err != nil {
		t.Skipf("cannot set RLIMIT_FSIZE: %v", err)
	}
	s := files.New(files.Options{Workspace: ws})
	_, err := s.Write(t.Context(), protocol.WriteRequest{Path: "keep.txt", Content: strings.Repeat("x", 1<<16)})
	_, err2 := s.Edit(t.Context(), protocol.EditRequest{Path: "keep.txt", OldString: "old", NewString: strings.Repeat("y", 1<<16)})
	_, err3 := s.Write(t.Context(), protocol.WriteRequest{Path: "keep.txt", Content: strings.Repeat("z", 1<<16), Append: true})
	_, err4 := s.Write(t.Context(), protocol.WriteRequest{Path: "new.txt", Content: strings.Repeat("z", 1<<16), Append: true})
	syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old) // so the test framework can write freely again
	checkErr(t, err, protocol.CodeTooLarge, "file size limit")
	checkErr(t, err2, protocol.CodeTooLarge, "file size limit")
	checkErr(t, err3, protocol.CodeTooLarge, "file size limit")
	checkErr(t, err4, protocol.CodeTooLarge, "file size limit")
}
