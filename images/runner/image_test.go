// Package runner_test checks the sandgate/runner image that
// images/runner/build.sh builds (make images).
package runner_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/sandbox/sandboxtest"
)

const image = "sandgate/runner:latest"

// TestImageInstalls runs the image as the Kubernetes provider's init
// container does, as the sandbox user with a read-only root, no network
// and no capabilities: `install` puts into a shared volume byte for byte
// the runner the image's label names, executable by the sandbox user, and
// fails, saying why, where it cannot.
func TestImageInstalls(t *testing.T) {
	sandboxtest.RequireImage(t, image)
	want := sandboxtest.DockerCLI(t, "image", "inspect", "-f", `{{index .Config.Labels "sandgate.runner-sha256"}}`, image)
	if len(want) != 64 {
		t.Fatalf("image %s has no sandgate.runner-sha256 label (%q): rebuild it with make images", image, want)
	}
	tests := []struct {
		name string
		args []string
		want string // substring of the error; empty: installed
	}{
		{"into the volume", []string{"install", "/sandgate/bin/runner"}, ""},
		{"onto the read-only root", []string{"install", "/opt/runner"}, "read-only file system"},
		{"without a destination", []string{"install"}, "usage: runner install DEST"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Like an emptyDir: root's, writable by everyone. The sandbox
			// user's files in it can be removed by whoever runs the test.
			shared := filepath.Join(t.TempDir(), "shared")
			if err := os.Mkdir(shared, 0o777); err != nil || os.Chmod(shared, 0o777) != nil {
				t.Fatalf("make the shared volume: %v", err)
			}
			out, err := run(t, []string{"-v", shared + ":/sandgate/bin"}, tt.args...)
			if tt.want != "" {
				if err == nil || !strings.Contains(out, tt.want) {
					t.Fatalf("runner %v: %v, %q; want a failure that says %q", tt.args, err, out, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("runner %v: %v\n%s", tt.args, err, out)
			}
			installed := filepath.Join(shared, "runner")
			b, err := os.ReadFile(installed)
			if err != nil {
				t.Fatal(err)
			}
			if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != want {
				t.Errorf("installed runner has sha256 %x, want the image's %s", sum, want)
			}
			if fi, _ := os.Stat(installed); fi.Mode().Perm() != 0o555 {
				t.Errorf("installed runner has mode %v, want 0555", fi.Mode().Perm())
			}
			// The sandbox's container runs it from the volume, mounted
			// read-only: the copy starts (and installs itself once more).
			opts := []string{"-v", shared + ":/sandgate/bin:ro", "--tmpfs", "/tmp", "--entrypoint", "/sandgate/bin/runner"}
			if out, err := run(t, opts, "install", "/tmp/runner"); err != nil {
				t.Errorf("run the installed runner from a read-only volume: %v\n%s", err, out)
			}
		})
	}
}

// run runs a container of the image with args, hardened like a sandbox
// pod's init container, with the docker run options opts besides, and
// returns its combined output.
func run(t *testing.T, opts []string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	argv := []string{"run", "--rm", "--user", "1000:1000", "--read-only", "--network", "none",
		"--cap-drop", "ALL", "--security-opt", "no-new-privileges"}
	argv = append(append(append(argv, opts...), image), args...)
	out, err := exec.CommandContext(ctx, "docker", argv...).CombinedOutput()
	return string(out), err
}
