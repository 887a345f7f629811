package docker_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/client"

	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/sandbox"
	"github.com/sandgate/sandgate/sandbox/docker"
	"github.com/sandgate/sandgate/sandbox/sandboxtest"
)

// TestUsernsRemap: on an engine that remaps user namespaces, a sandbox
// starts (its runner can create its socket), its user writes /workspace,
// and the gateway's host-side read of a file only that user may read
// succeeds, as the host ids the sandbox user is on that engine.
//
// make test runs it, and TestConformance, a second time against an
// engine of its own started with userns-remap (deploy/userns-engine.sh,
// which sets SANDGATE_USERNS=1: there the test must not skip).
func TestUsernsRemap(t *testing.T) {
	sandboxtest.RequireDocker(t)
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	info, err := cli.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(info.SecurityOptions, func(o string) bool { return strings.Contains(o, "name=userns") }) {
		if os.Getenv("SANDGATE_USERNS") != "" {
			t.Fatalf("SANDGATE_USERNS is set, but the engine at %s does not remap user namespaces", cli.DaemonHost())
		}
		t.Skip("the engine does not remap user namespaces; make test runs this against one that does")
	}
	rootUID, _ := strconv.Atoi(strings.Split(filepath.Base(info.DockerRootDir), ".")[0])

	env := newEnv(t, docker.Config{})
	sb, err := env.p.Create(t.Context(), sandbox.Spec{Owner: "o", Image: testImage, ExpiresAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatalf("Create on an engine that remaps user namespaces: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = env.p.Remove(ctx, sb.ID())
	})
	c, err := protocol.Dial(t.Context(), sb.Dial)
	if err != nil {
		t.Fatalf("connect to the runner: %v", err)
	}
	defer c.Close()
	var wrote protocol.WriteResult
	if err := c.Call(t.Context(), protocol.OpFileWrite, protocol.WriteRequest{Path: "/workspace/d/private.txt", Content: "mine\n", Mode: 0o600}, &wrote); err != nil {
		t.Fatalf("the sandbox user writes /workspace: %v", err)
	}

	f, err := sb.(sandbox.HostFiles).OpenHostFile("/workspace/d/private.txt")
	if err != nil {
		t.Fatalf("host-side open of a file only the sandbox user may read: %v", err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil || string(data) != "mine\n" {
		t.Fatalf("host-side read: %q, %v", data, err)
	}
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if uid := st.Sys().(*syscall.Stat_t).Uid; int(uid) != rootUID+1000 {
		t.Errorf("the file is host uid %d, want the remapped %d (root %d + 1000)", uid, rootUID+1000, rootUID)
	}
}
