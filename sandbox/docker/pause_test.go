package docker_test

import (
	"errors"
	"testing"

	"github.com/docker/docker/api/types/container"

	"github.com/sandgate/sandgate/sandbox"
	"github.com/sandgate/sandgate/sandbox/docker"
)

// TestPauseTellsPauseFromDeath: a container stopped by someone else (a
// dead runner, as far as the provider can tell) is not listed as paused
// and not resumed, so the gateway replaces it; a paused sandbox that is
// replaced instead (Recreate) is no longer paused.
func TestPauseTellsPauseFromDeath(t *testing.T) {
	t.Parallel()
	env := newEnv(t, docker.Config{})
	ctx := t.Context()
	sb, err := env.p.Create(ctx, sandbox.Spec{Owner: "o", Image: testImage})
	if err != nil {
		t.Fatal(err)
	}
	id := sb.ID()
	grace := 0
	if err := env.cli.ContainerStop(ctx, sb.Info().ContainerID, container.StopOptions{Timeout: &grace}); err != nil {
		t.Fatal(err)
	}
	if infos, err := env.p.List(ctx, sandbox.Filter{ID: id}); err != nil || len(infos) != 1 || infos[0].State == sandbox.StatePaused {
		t.Errorf("List of a stopped sandbox = %+v, %v; want it listed, not paused", infos, err)
	}
	if _, err := env.p.Resume(ctx, id); !errors.Is(err, sandbox.ErrNotPaused) {
		t.Errorf("Resume of a dead sandbox: err = %v, want ErrNotPaused", err)
	}

	if _, err := env.p.Recreate(ctx, sandbox.Spec{ID: id, Owner: "o", Image: testImage}); err != nil {
		t.Fatal(err)
	}
	if err := env.p.Pause(ctx, id, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := env.p.Recreate(ctx, sandbox.Spec{ID: id, Owner: "o", Image: testImage}); err != nil {
		t.Fatal(err)
	}
	infos, err := env.p.List(ctx, sandbox.Filter{ID: id})
	if err != nil || len(infos) != 1 {
		t.Fatalf("List after Recreate = %+v, %v", infos, err)
	}
	if err := env.cli.ContainerStop(ctx, infos[0].ContainerID, container.StopOptions{Timeout: &grace}); err != nil {
		t.Fatal(err)
	}
	if infos, err := env.p.List(ctx, sandbox.Filter{ID: id}); err != nil || len(infos) != 1 || infos[0].State == sandbox.StatePaused {
		t.Errorf("a paused sandbox replaced and then stopped is listed as %+v, %v; want it dead, not paused", infos, err)
	}
}
