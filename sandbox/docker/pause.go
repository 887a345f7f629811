package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"

	"github.com/sandgate/sandgate/sandbox"
)

// A paused sandbox is a stopped container with a marker in its socket
// dir. Labels cannot change on an existing container, so the marker
// tells a pause from a death (a stopped container without one). The
// socket dir is sealed (socketdir.go): nothing in the sandbox can make,
// remove or see the marker.
const pausedMarker = "paused"

// resumedStamp is a file in the socket dir whose modification time is
// the sandbox's last resume (sandbox.Info.ResumedAt).
const resumedStamp = "resumed"

// pauseGrace is how long a sandbox's processes get to exit on SIGTERM
// before the engine kills them.
const pauseGrace = 2 * time.Second

// Pause stops sandbox id's container: its processes end and its CPU and
// memory are freed; its workspace, its labels and its socket dir stay.
// The marker is written before the container stops, so a crash in
// between leaves a running sandbox (a running container's marker means
// nothing; Resume and Recreate remove it), never a stopped one that
// looks dead.
func (p *Provider) Pause(ctx context.Context, id, reason string) error {
	start := time.Now()
	if !p.ws.Durable() {
		return fmt.Errorf("pause sandbox %s: %w: this host keeps workspaces in memory (%s), and a stopped container's would be lost; run the gateway where loop devices work (--workspace-backend loop)", id, sandbox.ErrCannotPause, p.ws.Reason())
	}
	cs, err := p.findOne(ctx, id, "pause")
	if err != nil {
		return err
	}
	running := slices.ContainsFunc(cs, func(c container.Summary) bool { return c.State == container.StateRunning })
	if !running && p.isPaused(id) {
		return nil // paused already: its mark, time and reason stay
	}
	for _, c := range cs { // left by a crash mid-resume
		if err := p.dropCheckpoint(ctx, c.ID); err != nil {
			return fmt.Errorf("pause sandbox %s: %w", id, err)
		}
	}
	marker := p.pausedMarker(id)
	if err := writeMarker(marker, reason); err != nil {
		return fmt.Errorf("pause sandbox %s: mark it paused: %w", id, err)
	}
	grace := int(pauseGrace.Seconds())
	for _, c := range cs {
		err := p.cli.ContainerStop(ctx, c.ID, container.StopOptions{Timeout: &grace})
		if err != nil && !cerrdefs.IsNotFound(err) {
			// Still running, perhaps: not paused after all.
			_ = os.Remove(marker)
			return fmt.Errorf("pause sandbox %s: stop container %s: %w", id, short(c.ID), engineErr(err))
		}
	}
	p.log.Info("sandbox paused", "sandbox_id", id, "duration_ms", time.Since(start).Milliseconds())
	return nil
}

// Resume starts paused sandbox id's container again, on the same
// workspace and socket dir, and returns once its runner listens. The
// container's tmpfs mounts (/tmp, /dev/shm) start empty, as after a
// reboot.
func (p *Provider) Resume(ctx context.Context, id string) (sandbox.Sandbox, error) {
	start := time.Now()
	cs, err := p.findOne(ctx, id, "resume")
	if err != nil {
		return nil, err
	}
	c := cs[0]
	if c.State == container.StateRunning {
		_ = os.Remove(p.pausedMarker(id)) // a pause that did not finish
		return p.Get(ctx, id)
	}
	if !p.isPaused(id) {
		return nil, fmt.Errorf("resume sandbox %s: its container is %s: %w", id, c.State, sandbox.ErrNotPaused)
	}
	dir := p.socketHostDir(id)
	restoring := p.hasCheckpoint(c.ID)
	open := p.openSocketDir
	if restoring {
		open = p.grantSocketDir
	}
	if err := open(dir); err != nil {
		return nil, fmt.Errorf("resume sandbox %s: %w", id, err)
	}
	// Stamped before the start: a stamp without a resume only gives a
	// paused sandbox a later lifetime end, which no sweep of a paused
	// one reads.
	if err := os.WriteFile(filepath.Join(dir, resumedStamp), nil, 0o600); err != nil {
		return nil, fmt.Errorf("resume sandbox %s: stamp it: %w", id, err)
	}
	restored, err := p.restoreOrStart(ctx, id, c.ID, dir, restoring)
	if err != nil {
		return nil, fmt.Errorf("resume sandbox %s: %w", id, err)
	}
	if err := p.sealSocketDir(dir); err != nil {
		return nil, fmt.Errorf("resume sandbox %s: %w", id, err)
	}
	// The checkpoint is stale once the sandbox runs on: gone before the
	// marker, so that no later resume can bring old memory back.
	if err := p.dropCheckpoint(ctx, c.ID); err != nil {
		return nil, fmt.Errorf("resume sandbox %s: %w", id, err)
	}
	if err := os.Remove(p.pausedMarker(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("resume sandbox %s: unmark it: %w", id, err)
	}
	sb, err := p.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if h, ok := sb.(*handle); ok {
		h.info.MemoryKept = restored
	}
	p.log.Info("sandbox resumed", "sandbox_id", id, "container_id", short(c.ID), "memory_restored", restored, "duration_ms", time.Since(start).Milliseconds())
	return sb, nil
}

// findOne returns sandbox id's containers, or ErrNotFound when it has
// none.
func (p *Provider) findOne(ctx context.Context, id, verb string) ([]container.Summary, error) {
	if !namePattern.MatchString(id) {
		return nil, fmt.Errorf("%s sandbox %q: %w", verb, id, sandbox.ErrNotFound)
	}
	cs, err := p.find(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("%s sandbox %s: %w", verb, id, err)
	}
	if len(cs) == 0 {
		return nil, fmt.Errorf("%s sandbox %s: %w", verb, id, sandbox.ErrNotFound)
	}
	return cs, nil
}

func (p *Provider) pausedMarker(id string) string {
	return filepath.Join(p.socketHostDir(id), pausedMarker)
}

// writeMarker writes a pause marker at path, holding the pause's reason
// (sandbox.PauseReason).
func writeMarker(path, reason string) error {
	return os.WriteFile(path, []byte(sandbox.PauseReason(reason)), 0o600)
}

// markerReason is the reason a pause marker holds. The marker lives in
// the socket dir, which the sandbox can write: the read is bounded and
// what it holds is only trusted as far as PauseReason lets it.
func markerReason(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := make([]byte, sandbox.MaxPauseReason)
	n, _ := io.ReadFull(f, buf)
	return sandbox.PauseReason(string(buf[:n]))
}

// isPaused reports whether sandbox id carries the pause marker.
func (p *Provider) isPaused(id string) bool {
	_, err := os.Lstat(p.pausedMarker(id))
	return err == nil
}

// hostState adds to info, listed from its container, what the host
// keeps of the sandbox: StatePaused for a stopped container that was
// paused (with PausedAt, the marker's time, and whether its memory was
// kept), its last resume and what its workspace and checkpoint take on
// disk.
func (p *Provider) hostState(info *sandbox.Info) {
	dir := p.socketHostDir(info.ID)
	if info.State != container.StateRunning {
		if fi, err := os.Lstat(filepath.Join(dir, pausedMarker)); err == nil {
			info.State, info.PausedAt = sandbox.StatePaused, fi.ModTime().UTC()
			info.PausedFor = markerReason(filepath.Join(dir, pausedMarker))
			info.MemoryKept = p.hasCheckpoint(info.ContainerID)
		}
	}
	if fi, err := os.Lstat(filepath.Join(dir, resumedStamp)); err == nil {
		info.ResumedAt = fi.ModTime().UTC()
	}
	info.DiskBytes = p.ws.DiskBytes(info.ID)
	if info.MemoryKept {
		info.DiskBytes += dirBytes(p.checkpointPath(info.ContainerID))
	}
}
