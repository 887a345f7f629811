package sandboxtest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// AssertRootFSIDs fails unless every thread of this process has root's
// file system ids: the fourth field of the Uid: and Gid: lines of its
// status. Code that takes a sandbox user's ids on one thread
// (workspace.Manager.OpenAsUser) must always give them back.
func AssertRootFSIDs(t testing.TB) {
	t.Helper()
	tasks, err := filepath.Glob("/proc/self/task/*/status")
	if err != nil || len(tasks) == 0 {
		t.Fatalf("threads: %v, %v", tasks, err)
	}
	for _, status := range tasks {
		data, err := os.ReadFile(status)
		if errors.Is(err, os.ErrNotExist) {
			continue // the thread ended
		}
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(string(data)) {
			f := strings.Fields(line)
			if len(f) == 5 && (f[0] == "Uid:" || f[0] == "Gid:") && f[4] != "0" {
				t.Errorf("%s: %s (file system id %s, want 0)", status, strings.TrimSpace(line), f[4])
			}
		}
	}
}
