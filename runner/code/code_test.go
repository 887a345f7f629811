package code_test

import (
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runner/code"
	"github.com/sandgate/sandgate/runner/process"
	"github.com/sandgate/sandgate/runner/protocol"
)

// requireBinary skips when bin is missing on a developer's machine but
// fails in CI, where the image is expected to have it.
func requireBinary(t *testing.T, bin string) {
	t.Helper()
	if _, err := exec.LookPath(bin); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is required in CI: %v", bin, err)
		}
		t.Skipf("%s not installed", bin)
	}
}

// output collects the events of one run.
type output struct {
	mu             sync.Mutex
	stdout, stderr strings.Builder
	first          time.Time
}

func (o *output) emit(ev protocol.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch ev.Type {
	case protocol.EventStdout:
		if o.first.IsZero() {
			o.first = time.Now()
		}
		o.stdout.Write(ev.Data)
	case protocol.EventStderr:
		o.stderr.Write(ev.Data)
	}
}

func TestRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		bin      string
		req      protocol.CodeRequest
		wantOut  string
		wantCode int
	}{
		{"bash", "bash", protocol.CodeRequest{Language: "bash", Code: "echo hi $((6*7))\nexit 3"}, "hi 42\n", 3},
		{"bash stdin", "bash", protocol.CodeRequest{Language: "bash", Code: "read x; echo got $x", Stdin: []byte("in\n")}, "got in\n", 0},
		{"python", "python3", protocol.CodeRequest{Language: "python", Code: "import sys\nprint(sys.version_info[0])"}, "3\n", 0},
		{"python alias", "python3", protocol.CodeRequest{Language: " Python3 ", Code: "print('a')"}, "a\n", 0},
		{"python env", "python3", protocol.CodeRequest{Language: "python", Code: "import os\nprint(os.environ['X'])", Env: map[string]string{"X": "y"}}, "y\n", 0},
		{"python stdin", "python3", protocol.CodeRequest{Language: "python", Code: "import sys\nprint(sys.stdin.read().upper())", Stdin: []byte("abc")}, "ABC\n", 0},
		{"python error", "python3", protocol.CodeRequest{Language: "python", Code: "raise SystemExit(4)"}, "", 4},
		{"node", "node", protocol.CodeRequest{Language: "node", Code: "console.log(1 + 1)"}, "2\n", 0},
		{"javascript alias", "node", protocol.CodeRequest{Language: "javascript", Code: "process.exit(5)"}, "", 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			requireBinary(t, tt.bin)
			m := process.NewManager(process.Options{Workspace: t.TempDir()})
			t.Cleanup(m.Close)
			var o output
			res, err := code.Run(t.Context(), m, tt.req, o.emit)
			if err != nil {
				t.Fatal(err)
			}
			if o.stdout.String() != tt.wantOut || res.ExitCode != tt.wantCode {
				t.Errorf("stdout %q exit %d (stderr %q), want %q %d", o.stdout.String(), res.ExitCode, o.stderr.String(), tt.wantOut, tt.wantCode)
			}
		})
	}
}

// TestRunStreams checks that a Python snippet's output arrives while it
// runs, and that the snippet's file is gone afterwards.
func TestRunStreams(t *testing.T) {
	t.Parallel()
	requireBinary(t, "python3")
	m := process.NewManager(process.Options{Workspace: t.TempDir()})
	t.Cleanup(m.Close)
	var o output
	res, err := code.Run(t.Context(), m, protocol.CodeRequest{
		Language: "python",
		Code:     "import time\nprint(__file__)\ntime.sleep(1)\nprint('done')",
	}, o.emit)
	end := time.Now()
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if gap := end.Sub(o.first); gap < 800*time.Millisecond {
		t.Errorf("first output arrived %v before the end, want about 1s", gap)
	}
	file, _, _ := strings.Cut(o.stdout.String(), "\n")
	if !strings.HasPrefix(file, os.TempDir()) || !strings.HasSuffix(file, ".py") {
		t.Errorf("snippet file %q is not a .py file under %s", file, os.TempDir())
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("snippet file %s still exists: %v", file, err)
	}
}

func TestRunErrors(t *testing.T) {
	t.Parallel()
	empty := process.NewManager(process.Options{Workspace: t.TempDir(), BaseEnv: []string{"PATH=" + t.TempDir()}})
	t.Cleanup(empty.Close)
	tests := []struct {
		name    string
		req     protocol.CodeRequest
		code    protocol.Code
		message string
	}{
		{"unknown language", protocol.CodeRequest{Language: "ruby", Code: "puts 1"}, protocol.CodeInvalid, "use one of " + protocol.LanguageNames()},
		{"no language", protocol.CodeRequest{Code: "1"}, protocol.CodeInvalid, "use one of " + protocol.LanguageNames()},
		{"interpreter missing", protocol.CodeRequest{Language: "python", Code: "1"}, protocol.CodeUnsupported, "python3 is not installed"},
		{"node missing", protocol.CodeRequest{Language: "node", Code: "1"}, protocol.CodeUnsupported, "node or nodejs is not installed"},
		{"bad cwd", protocol.CodeRequest{Language: "bash", Code: "true", Cwd: "/proc/self"}, protocol.CodeInvalid, "/proc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := code.Run(t.Context(), empty, tt.req, func(protocol.Event) {})
			if protocol.CodeOf(err) != tt.code || err == nil || !strings.Contains(err.Error(), tt.message) {
				t.Errorf("Run error = %v, want code %q containing %q", err, tt.code, tt.message)
			}
		})
	}
}
