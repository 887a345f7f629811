package docker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/checkpoint"
	"github.com/docker/docker/api/types/container"
	"golang.org/x/sys/unix"

	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/sandbox"
)

// Memory pauses, under gVisor (Config.Runtime "runsc", registered in the
// engine with checkpoints enabled: deploy/setup-host.sh). runsc writes
// the whole sandbox (every process's memory, its kernel state, its tmpfs
// mounts) into the engine's checkpoint of the container (the engine
// refuses to restore from a directory of our choosing) and the container
// exits; a start from that checkpoint restores it. The engine removes it
// with the container. Under runc the engine would
// need CRIU, which is not installed, and a runc checkpoint would not hold
// a sandbox's processes as reliably; KeepsMemory says so.
//
// gVisor cannot save a socket bound to or connected through a host path,
// and the runner's is one (the socket dir is bind-mounted). So the runner
// first closes its listener and every connection (runner.Gate), and
// binds again on SIGUSR2 once restored.

// checkpointName is the one checkpoint a paused sandbox has.
const checkpointName = "pause"

// memoryRuntime is the runtime whose sandboxes can be paused with their
// memory.
const memoryRuntime = "runsc"

const (
	// prepareTimeout bounds the runner's letting go of its sockets.
	prepareTimeout = 5 * time.Second
	// reopenAfter is how long a restored runner gets to bind again after
	// its signal before it is signalled again (the signal may have come
	// before it could take it). A runner that bound is not signalled
	// again: signals repeated every 250 ms regardless made restored
	// runners that accept nothing (see restore) several times as common.
	reopenAfter = time.Second
	// restoreAttempts bounds the tries of a restore the engine refuses
	// for its own race (startFromCheckpoint).
	restoreAttempts = 5
	// restoreTries bounds the restores of one checkpoint whose runner
	// does not answer (see restore).
	restoreTries = 3
	// answerTimeout bounds a restored runner's answer to a connection.
	answerTimeout = 5 * time.Second
)

var _ sandbox.MemoryPauser = (*Provider)(nil)

// KeepsMemory reports whether this provider's sandboxes can be paused
// with their memory: under gVisor only.
func (p *Provider) KeepsMemory() (bool, string) {
	if p.cfg.Runtime == memoryRuntime {
		return true, ""
	}
	rt := p.cfg.Runtime
	if rt == "" {
		rt = "the engine's default runtime (runc)"
	}
	return false, fmt.Sprintf("sandboxes here run under %s, whose memory cannot be checkpointed; a gateway started with --runtime runsc (gVisor) keeps memory across a pause", rt)
}

// PauseKeepingMemory checkpoints sandbox id and stops it; see
// sandbox.MemoryPauser. The pause marker is written first, as for Pause.
func (p *Provider) PauseKeepingMemory(ctx context.Context, id, reason string) error {
	start := time.Now()
	if ok, why := p.KeepsMemory(); !ok {
		return fmt.Errorf("pause sandbox %s with its memory: %w: %s", id, sandbox.ErrCannotKeepMemory, why)
	}
	if !p.ws.Durable() {
		return fmt.Errorf("pause sandbox %s: %w: this host keeps workspaces in memory (%s)", id, sandbox.ErrCannotPause, p.ws.Reason())
	}
	cs, err := p.findOne(ctx, id, "pause")
	if err != nil {
		return err
	}
	c := cs[0]
	if c.State != container.StateRunning {
		if p.isPaused(id) {
			return nil
		}
		return fmt.Errorf("pause sandbox %s: its container is %s: %w", id, c.State, sandbox.ErrNotFound)
	}
	marker := p.pausedMarker(id)
	if err := writeMarker(marker, reason); err != nil {
		return fmt.Errorf("pause sandbox %s: mark it paused: %w", id, err)
	}
	if err := p.checkpoint(ctx, id, c.ID); err != nil {
		_ = os.Remove(marker)
		p.reopenRunner(context.WithoutCancel(ctx), c.ID)
		return fmt.Errorf("pause sandbox %s with its memory: %w: %w", id, sandbox.ErrCannotKeepMemory, err)
	}
	p.log.Info("sandbox paused with its memory", "sandbox_id", id, "duration_ms", time.Since(start).Milliseconds(),
		"checkpoint_bytes", dirBytes(p.checkpointPath(c.ID)))
	return nil
}

// checkpoint has the runner let go of its sockets, then checkpoints the
// container, which exits.
func (p *Provider) checkpoint(ctx context.Context, id, containerID string) error {
	sock := filepath.Join(p.socketHostDir(id), SocketName)
	pctx, cancel := context.WithTimeout(ctx, prepareTimeout)
	defer cancel()
	cl, err := protocol.Dial(pctx, func(ctx context.Context) (net.Conn, error) { return dialSocket(ctx, sock) })
	if err != nil {
		return fmt.Errorf("reach its runner: %w", err)
	}
	defer cl.Close()
	if !cl.Supports(protocol.FeatureCheckpoint) {
		return errors.New("its runner is older than memory pauses; it keeps memory once replaced (sandbox_destroy and create)")
	}
	if err := cl.Call(pctx, protocol.OpCheckpointPrepare, struct{}{}, nil); err != nil {
		return fmt.Errorf("ask its runner to close its sockets: %w", err)
	}
	select {
	case <-cl.Done(): // the runner closed it, last of all
	case <-pctx.Done():
		return fmt.Errorf("its runner did not close its sockets within %v", prepareTimeout)
	}
	if err := p.dropCheckpoint(ctx, containerID); err != nil {
		return fmt.Errorf("clear an old checkpoint: %w", err)
	}
	err = p.cli.CheckpointCreate(ctx, containerID, checkpoint.CreateOptions{CheckpointID: checkpointName, Exit: true})
	if err != nil {
		_ = p.dropCheckpoint(context.WithoutCancel(ctx), containerID)
		return fmt.Errorf("checkpoint container %s: %w", short(containerID), engineErr(err))
	}
	// The engine answers before it has seen the container exit; a resume
	// that came first would find it running and restore nothing.
	return p.waitStopped(ctx, containerID)
}

// waitStopped returns once a container has stopped, a minute at most.
func (p *Provider) waitStopped(ctx context.Context, containerID string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	exited, errc := p.cli.ContainerWait(ctx, containerID, container.WaitConditionNotRunning)
	select {
	case <-exited:
		return nil
	case err := <-errc:
		return fmt.Errorf("wait for container %s to stop after its checkpoint: %w", short(containerID), engineErr(err))
	}
}

// restoreOrStart starts sandbox id's stopped container, whose socket
// dir is dir: from its checkpoint when restoring, tried restoreTries
// times, else (or then) afresh on its files. It reports whether the
// memory was restored.
func (p *Provider) restoreOrStart(ctx context.Context, id, containerID, dir string, restoring bool) (bool, error) {
	sock := filepath.Join(dir, SocketName)
	for try := 1; restoring && try <= restoreTries; try++ {
		err := p.restore(ctx, containerID, sock)
		if err == nil {
			return true, nil
		}
		p.log.Warn("sandbox memory restore failed", "sandbox_id", id, "try", try, "of", restoreTries, "error", err)
		p.stopQuietly(ctx, containerID)
	}
	if restoring {
		// Its files are all there: a cold start loses the processes,
		// not the work.
		p.log.Warn("sandbox memory could not be restored: starting it afresh on its files", "sandbox_id", id)
		if err := p.openSocketDir(dir); err != nil {
			return false, err
		}
	}
	return false, p.start(ctx, containerID, sock)
}

// restore starts a paused sandbox's container from its checkpoint and
// waits for its runner, which it signals to listen again.
func (p *Provider) restore(ctx context.Context, containerID, sock string) error {
	before := socketFile(sock)
	if err := p.startFromCheckpoint(ctx, containerID); err != nil {
		return err
	}
	// The runner replaces its socket when it binds again: a new file
	// (its inode number may be the old one's, reused; not its ctime).
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for socketFile(sock) == before {
		p.reopenRunner(ctx, containerID)
		deadline := time.Now().Add(reopenAfter)
		for socketFile(sock) == before && time.Now().Before(deadline) && ctx.Err() == nil {
			time.Sleep(readyPoll)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w: the restored runner did not listen again within %v", sandbox.ErrStartFailed, readyTimeout)
		}
	}
	// Ready means the runner answered a protocol handshake (answers),
	// not merely that its socket took a connection: gVisor can restore
	// a process whose epoll never reports an event again
	// (google/gvisor#13920), and Go's network poller then never hears of
	// the connection.
	return p.waitReady(ctx, containerID, sock)
}

// startFromCheckpoint starts a container from its pause checkpoint. The
// engine (Docker 20.10 to 29 with containerd) sometimes refuses a restore
// soon after a checkpoint with "failed to upload checkpoint to
// containerd: commit failed: content ...: already exists"
// (moby/moby#42900); the same start a moment later works, so it is tried
// again, a few times.
func (p *Provider) startFromCheckpoint(ctx context.Context, containerID string) error {
	var err error
	for attempt := range restoreAttempts {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
			}
			p.log.Info("restore refused by the engine's known race; trying again", "container_id", short(containerID), "attempt", attempt+1, "error", err)
		}
		err = p.cli.ContainerStart(ctx, containerID, container.StartOptions{CheckpointID: checkpointName})
		if err == nil || !strings.Contains(err.Error(), "already exists") {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("restore container %s from its checkpoint: %w", short(containerID), engineErr(err))
	}
	return nil
}

// fileID tells one file at a path from the next: its inode and change
// time; zero when there is none.
type fileID struct {
	ino   uint64
	ctime unix.Timespec
}

func socketFile(path string) fileID {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return fileID{}
	}
	return fileID{st.Ino, st.Ctim}
}

// stopQuietly stops a container whose restore failed half way, so that
// it can start afresh.
func (p *Provider) stopQuietly(ctx context.Context, containerID string) {
	zero := 0
	err := p.cli.ContainerStop(ctx, containerID, container.StopOptions{Timeout: &zero})
	if err != nil {
		p.log.Warn("stop a container whose restore failed", "container_id", short(containerID), "error", engineErr(err))
	}
}

// reopenRunner tells a runner that let go of its sockets for a checkpoint
// to listen again; the container's init forwards the signal. A runner
// that listens ignores it.
func (p *Provider) reopenRunner(ctx context.Context, containerID string) {
	err := p.cli.ContainerKill(ctx, containerID, "SIGUSR2")
	if err != nil && ctx.Err() == nil {
		p.log.Debug("signal the runner to listen again", "container_id", short(containerID), "error", err)
	}
}

// DropMemory removes paused sandbox id's checkpoint.
func (p *Provider) DropMemory(ctx context.Context, id string) error {
	cs, err := p.findOne(ctx, id, "drop the memory of")
	if err != nil {
		return err
	}
	for _, c := range cs {
		if err := p.dropCheckpoint(ctx, c.ID); err != nil {
			return fmt.Errorf("drop the memory of sandbox %s: %w", id, err)
		}
	}
	return nil
}

// dropCheckpoint removes a container's checkpoint, if it has one.
func (p *Provider) dropCheckpoint(ctx context.Context, containerID string) error {
	if !p.hasCheckpoint(containerID) {
		return nil
	}
	err := p.cli.CheckpointDelete(ctx, containerID, checkpoint.DeleteOptions{CheckpointID: checkpointName})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("delete the checkpoint of container %s: %w", short(containerID), engineErr(err))
	}
	return nil
}

// hasCheckpoint reports whether a container has its pause checkpoint.
func (p *Provider) hasCheckpoint(containerID string) bool {
	fi, err := os.Stat(p.checkpointPath(containerID))
	return err == nil && fi.IsDir()
}

// checkpointPath is where the engine keeps a container's pause
// checkpoint: read, never written, by the provider (for its presence
// and size; the engine's API lists only names).
func (p *Provider) checkpointPath(containerID string) string {
	return filepath.Join(p.engineRoot, "containers", containerID, "checkpoints", checkpointName)
}

// dirBytes is what the files under dir take on disk.
func dirBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			n += fi.Size()
		}
		return nil
	})
	return n
}
