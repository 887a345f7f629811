package docker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"

	"github.com/sandgate/sandgate/sandbox"
)

// find returns this instance's containers (running or not) for sandbox id.
// The container name makes it at most one, unless someone else made a
// container with our labels; Remove removes them all.
func (p *Provider) find(ctx context.Context, id string) ([]container.Summary, error) {
	f := p.scope()
	f.Add("label", LabelSandbox+"="+id)
	cs, err := p.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return nil, fmt.Errorf("list containers of sandbox %s: %w", id, engineErr(err))
	}
	return cs, nil
}

// Get returns the running sandbox id of this instance, or ErrNotFound. A
// sandbox whose container has stopped is not found: its runner is gone;
// Remove still cleans it up.
func (p *Provider) Get(ctx context.Context, id string) (sandbox.Sandbox, error) {
	if !namePattern.MatchString(id) {
		return nil, fmt.Errorf("get sandbox %q: %w", id, sandbox.ErrNotFound)
	}
	cs, err := p.find(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("get sandbox %s: %w", id, err)
	}
	for _, c := range cs {
		if c.State == container.StateRunning {
			info := infoFromSummary(c)
			sock := filepath.Join(p.socketHostDir(id), SocketName)
			return &handle{p: p, info: info, sock: sock}, nil
		}
	}
	if len(cs) > 0 {
		return nil, fmt.Errorf("get sandbox %s: container is %s: %w", id, cs[0].State, sandbox.ErrNotFound)
	}
	return nil, fmt.Errorf("get sandbox %s: %w", id, sandbox.ErrNotFound)
}

// List describes this instance's sandboxes, running or not, that match
// filter, oldest first.
func (p *Provider) List(ctx context.Context, filter sandbox.Filter) ([]sandbox.Info, error) {
	f := p.scope()
	if filter.Owner != "" {
		f.Add("label", LabelOwner+"="+filter.Owner)
	}
	if filter.Session != "" {
		f.Add("label", LabelSession+"="+filter.Session)
	}
	cs, err := p.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", engineErr(err))
	}
	infos := make([]sandbox.Info, 0, len(cs))
	for _, c := range cs {
		infos = append(infos, infoFromSummary(c))
	}
	slices.SortFunc(infos, func(a, b sandbox.Info) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return infos, nil
}

// Remove kills and removes the container of sandbox id with its anonymous
// volumes, then its socket dir. It returns ErrNotFound if this instance has
// no container for id; a leftover socket dir is removed all the same.
func (p *Provider) Remove(ctx context.Context, id string) error {
	if !namePattern.MatchString(id) {
		// Also keeps id from naming anything but a child of SocketDir.
		return fmt.Errorf("remove sandbox %q: %w", id, sandbox.ErrNotFound)
	}
	start := time.Now()
	cs, err := p.find(ctx, id)
	if err != nil {
		return fmt.Errorf("remove sandbox %s: %w", id, err)
	}
	var errs []error
	removed := 0
	for _, c := range cs {
		err := p.cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
		switch {
		case err == nil:
			removed++
		case cerrdefs.IsNotFound(err): // a concurrent Remove won
		default:
			errs = append(errs, fmt.Errorf("remove container %s: %w", short(c.ID), engineErr(err)))
		}
	}
	// After the container: a live runner could recreate its socket.
	if err := os.RemoveAll(p.socketHostDir(id)); err != nil {
		errs = append(errs, fmt.Errorf("remove socket dir: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("remove sandbox %s: %w", id, err)
	}
	if removed == 0 {
		return fmt.Errorf("remove sandbox %s: %w", id, sandbox.ErrNotFound)
	}
	p.log.Info("sandbox removed", "sandbox_id", id, "duration_ms", time.Since(start).Milliseconds())
	return nil
}
