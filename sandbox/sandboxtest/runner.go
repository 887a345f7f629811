package sandboxtest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// RunnerEnv names an environment variable that, when set, is the path of a
// runner binary for RunnerBinary to return instead of building one.
const RunnerEnv = "SANDGATE_TEST_RUNNER"

// buildRunner builds ./cmd/runner once per test process.
var buildRunner = sync.OnceValues(func() (string, error) {
	if p := os.Getenv(RunnerEnv); p != "" {
		return filepath.Abs(p)
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	// A fixed path per checkout, replaced atomically: concurrent test
	// processes of one checkout (go test ./...) each build and rename, and
	// nothing piles up in TMPDIR. Two checkouts (worktrees) tested at once
	// must not run each other's runner, so the path names the module root.
	sum := sha256.Sum256([]byte(root))
	dir := filepath.Join(os.TempDir(), "sandgate-test-"+hex.EncodeToString(sum[:6]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("make runner build dir: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "runner-*")
	if err != nil {
		return "", fmt.Errorf("make runner build file: %w", err)
	}
	tmp.Close()
	defer os.Remove(tmp.Name()) // no-op after the rename
	cmd := exec.Command("go", "build", "-trimpath", "-o", tmp.Name(), "./cmd/runner")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build ./cmd/runner: %w\n%s", err, out)
	}
	// The sandbox user is "other" to the host file; see docker.checkRunner.
	if err := os.Chmod(tmp.Name(), 0o755); err != nil {
		return "", fmt.Errorf("chmod runner: %w", err)
	}
	final := filepath.Join(dir, "runner")
	if err := os.Rename(tmp.Name(), final); err != nil {
		return "", fmt.Errorf("install runner: %w", err)
	}
	return final, nil
})

// RunnerBinary returns the path of a static runner binary built from
// ./cmd/runner of this module (CGO_ENABLED=0), building it on first use in
// the test process. If RunnerEnv is set, its value is returned instead.
func RunnerBinary(t testing.TB) string {
	t.Helper()
	p, err := buildRunner()
	if err != nil {
		t.Fatalf("runner binary: %v", err)
	}
	return p
}

// moduleRoot returns the directory of the main module's go.mod.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := string(bytes.TrimSpace(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("go env GOMOD: not inside a module")
	}
	return filepath.Dir(strings.TrimSpace(gomod)), nil
}
