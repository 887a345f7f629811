package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"

	"github.com/sandgate/sandgate/sandbox"
	"github.com/sandgate/sandgate/sandbox/workspace"
)

const (
	// maxSocketPath is the longest unix socket path we accept on the host.
	// Linux allows 107 bytes, macOS 103; staying under the smaller keeps
	// the path usable by plain-path dialers (socat, non-Linux builds).
	maxSocketPath = 104
	// rollbackTimeout bounds the cleanup of a failed Create, which runs
	// even when the caller's context is already cancelled.
	rollbackTimeout = 30 * time.Second
	// createTimeout bounds the uncancellable container create.
	createTimeout = 30 * time.Second
)

// Create starts a sandbox from spec and returns once its runner accepts
// connections on its socket. On any error everything it made (socket dir,
// workspace, container) is removed again.
func (p *Provider) Create(ctx context.Context, spec sandbox.Spec) (_ sandbox.Sandbox, retErr error) {
	start := time.Now()
	spec, err := p.prepare(ctx, spec)
	if err != nil {
		return nil, err
	}
	id, dir := spec.ID, p.socketHostDir(spec.ID)
	if err := p.makeSocketDir(dir); err != nil {
		return nil, fmt.Errorf("create sandbox %s: %w", id, err)
	}
	// From here on something exists; undo all of it unless we return a
	// sandbox.
	made := &made{socketDir: dir}
	defer func() {
		if retErr != nil {
			p.rollback(ctx, id, made)
		}
	}()
	host := HostPaths{SocketDir: dir}
	memory := ""
	switch {
	case spec.Snapshot != "" && !p.ws.Durable():
		return nil, fmt.Errorf("create sandbox %s from snapshot %s: %w: this host keeps workspaces in memory", id, spec.Snapshot, sandbox.ErrNoSnapshot)
	case spec.Snapshot != "":
		if host.Workspace, err = p.ws.CreateFromSnapshot(ctx, id, spec.Snapshot); err != nil {
			if errors.Is(err, workspace.ErrNoSnapshot) {
				err = fmt.Errorf("%w: %w", sandbox.ErrNoSnapshot, err)
			}
			return nil, err
		}
		made.workspace = true
		memory = p.snapshotCheckpoint(spec.Snapshot)
	case p.ws.Durable():
		lim := spec.Limits.WithDefaults()
		if host.Workspace, err = p.ws.Create(ctx, id, lim.WorkspaceBytes); err != nil {
			return nil, err
		}
		made.workspace = true
	}
	sb, err := p.run(ctx, spec, host, made, memory)
	if err != nil {
		return nil, err
	}
	p.log.Info("sandbox created", "sandbox_id", id, "container_id", short(sb.info.ContainerID),
		"image", spec.Image, "memory_restored", sb.info.MemoryKept, "duration_ms", time.Since(start).Milliseconds())
	return sb, nil
}

// Recreate replaces the container of sandbox spec.ID, keeping its socket
// dir and its workspace: the new container mounts the same files. A
// sandbox whose socket dir is gone was removed (ErrNotFound). On error
// the new container is removed again; the workspace stays, for a later
// Recreate or Remove.
func (p *Provider) Recreate(ctx context.Context, spec sandbox.Spec) (_ sandbox.Sandbox, retErr error) {
	start := time.Now()
	if !namePattern.MatchString(spec.ID) {
		return nil, fmt.Errorf("recreate sandbox %q: %w", spec.ID, sandbox.ErrNotFound)
	}
	id, dir := spec.ID, p.socketHostDir(spec.ID)
	if err := p.removeContainers(ctx, id); err != nil {
		return nil, fmt.Errorf("recreate sandbox %s: %w", id, err)
	}
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("recreate sandbox %s: %w", id, sandbox.ErrNotFound)
	}
	spec, err := p.prepare(ctx, spec)
	if err != nil {
		return nil, err
	}
	// The dead runner's socket is removed and the dir opened to the new
	// runner, which run seals again once it listens.
	if err := p.openSocketDir(dir); err != nil {
		return nil, fmt.Errorf("recreate sandbox %s: %w", id, err)
	}
	host := HostPaths{SocketDir: dir}
	if p.ws.Durable() {
		if host.Workspace, err = p.ws.Ready(id); err != nil {
			return nil, fmt.Errorf("recreate sandbox %s: workspace: %w", id, err)
		}
	}
	made := &made{}
	defer func() {
		if retErr != nil {
			p.rollback(ctx, id, made)
		}
	}()
	sb, err := p.run(ctx, spec, host, made, "")
	if err != nil {
		return nil, err
	}
	// A replacement of a paused sandbox runs: it is paused no longer.
	if err := os.Remove(p.pausedMarker(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("recreate sandbox %s: unmark it paused: %w", id, err)
	}
	p.log.Info("sandbox recreated", "sandbox_id", id, "container_id", short(sb.info.ContainerID),
		"workspace_kept", p.ws.Durable(), "duration_ms", time.Since(start).Milliseconds())
	return sb, nil
}

// run creates and starts the container of spec on host paths that exist,
// recording what it made for the caller's rollback; from memory, a
// snapshot's checkpoint, when it is not "".
func (p *Provider) run(ctx context.Context, spec sandbox.Spec, host HostPaths, made *made, memory string) (*handle, error) {
	cc, hc := ContainerConfig(spec, p.cfg, host)
	made.container = true
	containerID, err := p.createContainer(ctx, spec, cc, hc)
	made.containerID = containerID
	if err != nil {
		return nil, err
	}
	sock := filepath.Join(host.SocketDir, SocketName)
	restored := false
	if memory != "" {
		restored, err = p.startFromSnapshot(ctx, spec.ID, containerID, host.SocketDir, memory)
	} else {
		err = p.start(ctx, containerID, sock)
	}
	if err != nil {
		return nil, fmt.Errorf("start sandbox %s: %w", spec.ID, err)
	}
	if err := p.sealSocketDir(host.SocketDir); err != nil {
		return nil, fmt.Errorf("start sandbox %s: %w", spec.ID, err)
	}
	info := sandbox.Info{
		ID:               spec.ID,
		ContainerID:      containerID,
		Image:            spec.Image,
		Owner:            spec.Owner,
		Session:          spec.Session,
		Client:           spec.Client,
		Tenant:           spec.Tenant,
		Network:          spec.Network,
		Pool:             spec.Pool,
		CreatedAt:        parseTime(cc.Labels[LabelCreatedAt]),
		ExpiresAt:        parseTime(cc.Labels[LabelExpiresAt]),
		State:            container.StateRunning,
		WorkspaceDurable: host.Workspace != "",
		Template:         spec.Template,
		Metadata:         parseMetadata(cc.Labels[LabelMetadata]),
		Lifecycle:        spec.Lifecycle,
		MemoryKept:       restored,
	}
	return &handle{p: p, info: info, sock: sock}, nil
}

// prepare fills in the id and image of spec and checks, before anything
// is made, that the id is safe, the image usable and the socket path short
// enough.
func (p *Provider) prepare(ctx context.Context, spec sandbox.Spec) (sandbox.Spec, error) {
	if spec.ID == "" {
		spec.ID = newID()
	} else if !namePattern.MatchString(spec.ID) {
		return spec, fmt.Errorf("create sandbox: id %q must match %s", spec.ID, namePattern)
	}
	if spec.Image == "" {
		spec.Image = p.cfg.Image
	}
	if err := p.checkImage(ctx, spec.Image); err != nil {
		return spec, fmt.Errorf("create sandbox %s: %w", spec.ID, err)
	}
	sock := filepath.Join(p.socketHostDir(spec.ID), SocketName)
	if len(sock) >= maxSocketPath {
		return spec, fmt.Errorf("create sandbox %s: socket path %s is %d bytes, the limit is %d; choose a shorter socket dir",
			spec.ID, sock, len(sock), maxSocketPath-1)
	}
	return spec, nil
}

// createContainer creates the sandbox's container and returns its id.
func (p *Provider) createContainer(ctx context.Context, spec sandbox.Spec, cc *container.Config, hc *container.HostConfig) (string, error) {
	// The create call is not cancelled with ctx: the engine finishes a
	// create whose client went away, and we would never learn the id of
	// the container to roll back. It takes tens of milliseconds.
	createCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), createTimeout)
	defer cancel()
	resp, err := p.cli.ContainerCreate(createCtx, cc, hc, nil, nil, p.containerName(spec.ID))
	switch {
	case cerrdefs.IsNotFound(err): // removed since checkImage
		return "", fmt.Errorf("create container for sandbox %s: %w", spec.ID, imageMissing(spec.Image))
	case cerrdefs.IsConflict(err):
		return "", fmt.Errorf("create container for sandbox %s: id already in use: %w", spec.ID, err)
	case err != nil:
		return "", fmt.Errorf("create container for sandbox %s: %w", spec.ID, engineErr(err))
	}
	if err := ctx.Err(); err != nil {
		// The id is returned all the same, so the caller can roll back.
		return resp.ID, fmt.Errorf("create container for sandbox %s: %w", spec.ID, err)
	}
	return resp.ID, nil
}

// start starts the container and waits for its runner to listen on sock.
func (p *Provider) start(ctx context.Context, containerID, sock string) error {
	if err := p.cli.ContainerStart(ctx, containerID, container.StartOptions{}); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("start container %s: %w", short(containerID), ctx.Err())
		}
		return fmt.Errorf("%w: start container %s: %w", sandbox.ErrStartFailed, short(containerID), engineErr(err))
	}
	return p.waitReady(ctx, containerID, sock)
}

// newID returns 128 random bits in hex. crypto/rand.Read never fails.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// containerName is unique per instance and sandbox id, so the engine itself
// refuses a second container for the same sandbox.
func (p *Provider) containerName(id string) string {
	return "sandgate-" + p.cfg.Instance + "-" + id
}

// checkImage fails with ErrImageMissing if image is not present (the engine
// cannot pull here, and must not: images are built, not fetched), and
// refuses images that declare volumes, since Docker would back each one
// with an anonymous volume on the host disk, outside every size limit.
func (p *Provider) checkImage(ctx context.Context, image string) error {
	img, err := p.cli.ImageInspect(ctx, image)
	if cerrdefs.IsNotFound(err) {
		return imageMissing(image)
	}
	if err != nil {
		return fmt.Errorf("inspect image %s: %w", image, engineErr(err))
	}
	if img.Config != nil && len(img.Config.Volumes) > 0 {
		vols := make([]string, 0, len(img.Config.Volumes))
		for v := range img.Config.Volumes {
			vols = append(vols, v)
		}
		slices.Sort(vols)
		return fmt.Errorf("image %s declares VOLUME %v: volumes would escape the sandbox's size limits; rebuild it without VOLUME", image, vols)
	}
	return nil
}

// imageMissing is the error for an absent image, with what to do about it.
func imageMissing(image string) error {
	return fmt.Errorf("%w: image %s is not present in the Docker engine (run `make images` to build it)",
		sandbox.ErrImageMissing, image)
}

// made records what a Create or Recreate made, for its rollback.
type made struct {
	socketDir   string // "" when the socket dir predates the call
	workspace   bool   // the workspace was made by this call
	container   bool   // a container create was attempted
	containerID string // "" when the create did not say
}

// rollback removes what a failed Create or Recreate made. It runs on its
// own context: a create that failed because its caller gave up must still
// clean up. A container whose id the engine never returned (the create
// timed out, or the engine failed mid-way) is removed by its name, which
// is unique per instance and sandbox.
func (p *Provider) rollback(ctx context.Context, id string, m *made) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	if m.container {
		ref := m.containerID
		if ref == "" {
			ref = p.containerName(id)
		}
		err := p.cli.ContainerRemove(ctx, ref, container.RemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !cerrdefs.IsNotFound(err) {
			p.log.Error("roll back sandbox: remove container", "sandbox_id", id,
				"container", short(ref), "error", err)
		}
	}
	if m.workspace {
		if err := p.ws.Remove(id); err != nil {
			p.log.Error("roll back sandbox: remove workspace", "sandbox_id", id, "error", err)
		}
	}
	if m.socketDir != "" {
		if err := os.RemoveAll(m.socketDir); err != nil {
			p.log.Error("roll back sandbox: remove socket dir", "sandbox_id", id, "error", err)
		}
	}
}

// engineErr marks errors that mean the engine could not be reached.
func engineErr(err error) error {
	if client.IsErrConnectionFailed(err) {
		return fmt.Errorf("%w: %w", sandbox.ErrUnavailable, err)
	}
	return err
}

// short returns the 12-character form of a container id, as docker ps.
func short(containerID string) string {
	if len(containerID) > 12 {
		return containerID[:12]
	}
	return containerID
}
