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
			info.WorkspaceDurable = p.ws.Durable()
			p.hostState(&info)
			// A sandbox an older gateway made has an unsealed dir.
			if err := p.sealSocketDir(p.socketHostDir(id)); err != nil {
				return nil, fmt.Errorf("get sandbox %s: %w", id, err)
			}
			sock := filepath.Join(p.socketHostDir(id), SocketName)
			return &handle{p: p, info: info, sock: sock}, nil
		}
	}
	if len(cs) > 0 {
		info := infoFromSummary(cs[0])
		p.hostState(&info)
		return nil, fmt.Errorf("get sandbox %s: it is %s: %w", id, info.State, sandbox.ErrNotFound)
	}
	return nil, fmt.Errorf("get sandbox %s: %w", id, sandbox.ErrNotFound)
}

// List describes this instance's sandboxes, running or not, that match
// filter, oldest first. A sandbox whose container is gone but whose
// workspace or socket dir is still on the host (removed from outside, or
// mid-Recreate) is listed with State StateNoContainer and only its id, so
// reconciliation can finish removing it; it matches only an empty filter.
func (p *Provider) List(ctx context.Context, filter sandbox.Filter) ([]sandbox.Info, error) {
	f := p.scope()
	if filter.Owner != "" {
		f.Add("label", LabelOwner+"="+filter.Owner)
	}
	if filter.Session != "" {
		f.Add("label", LabelSession+"="+filter.Session)
	}
	if filter.Client != "" {
		f.Add("label", LabelClient+"="+filter.Client)
	}
	if filter.Tenant != "" {
		f.Add("label", LabelTenant+"="+filter.Tenant)
	}
	if filter.ID != "" {
		f.Add("label", LabelSandbox+"="+filter.ID)
	}
	cs, err := p.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", engineErr(err))
	}
	infos := make([]sandbox.Info, 0, len(cs))
	seen := map[string]bool{}
	for _, c := range cs {
		info := infoFromSummary(c)
		info.WorkspaceDurable = p.ws.Durable()
		p.hostState(&info)
		infos = append(infos, info)
		seen[info.ID] = true
	}
	if filter == (sandbox.Filter{}) {
		infos = append(infos, p.leftovers(seen)...)
	}
	slices.SortFunc(infos, func(a, b sandbox.Info) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return infos, nil
}

// StateNoContainer is the State of a listed sandbox that has host state
// (workspace, socket dir) but no container.
const StateNoContainer = "no-container"

// leftovers describes sandboxes that have a socket dir or a workspace on
// the host but no container (ids in seen have one). CreatedAt is the
// directory's modification time, so reconciliation's grace period applies.
func (p *Provider) leftovers(seen map[string]bool) []sandbox.Info {
	var out []sandbox.Info
	add := func(id, dir string) {
		if seen[id] || !namePattern.MatchString(id) {
			return
		}
		seen[id] = true
		info := sandbox.Info{ID: id, State: StateNoContainer, WorkspaceDurable: p.ws.Durable()}
		if fi, err := os.Lstat(dir); err == nil {
			info.CreatedAt = fi.ModTime().UTC()
		}
		out = append(out, info)
	}
	if ents, err := os.ReadDir(p.cfg.SocketDir); err == nil {
		for _, e := range ents {
			add(e.Name(), filepath.Join(p.cfg.SocketDir, e.Name()))
		}
	}
	if ids, err := p.ws.List(); err == nil {
		for _, id := range ids {
			add(id, p.ws.Dir(id))
		}
	}
	return out
}

// Remove kills and removes the container of sandbox id with its anonymous
// volumes, then its workspace and socket dir. It returns ErrNotFound if
// this instance has neither a container nor host state for id.
func (p *Provider) Remove(ctx context.Context, id string) error {
	if !namePattern.MatchString(id) {
		// Also keeps id from naming anything but a child of SocketDir.
		return fmt.Errorf("remove sandbox %q: %w", id, sandbox.ErrNotFound)
	}
	start := time.Now()
	_, dirErr := os.Lstat(p.socketHostDir(id))
	_, wsErr := os.Lstat(p.ws.Dir(id))
	hostState := dirErr == nil || (p.ws.Durable() && wsErr == nil)
	cs, err := p.find(ctx, id)
	if err != nil {
		return fmt.Errorf("remove sandbox %s: %w", id, err)
	}
	if err := p.removeContainers(ctx, id, cs...); err != nil {
		// The workspace stays while its container may still run.
		return fmt.Errorf("remove sandbox %s: %w", id, err)
	}
	var errs []error
	// After the container: nothing uses the workspace any more, and a
	// live runner could have recreated its socket.
	if err := p.ws.Remove(id); err != nil {
		errs = append(errs, err)
	}
	if err := os.RemoveAll(p.socketHostDir(id)); err != nil {
		errs = append(errs, fmt.Errorf("remove socket dir: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("remove sandbox %s: %w", id, err)
	}
	if len(cs) == 0 && !hostState {
		return fmt.Errorf("remove sandbox %s: %w", id, sandbox.ErrNotFound)
	}
	p.log.Info("sandbox removed", "sandbox_id", id, "duration_ms", time.Since(start).Milliseconds())
	return nil
}

// removeContainers force-removes the given containers of sandbox id, or,
// when none are given, every container find reports for it.
func (p *Provider) removeContainers(ctx context.Context, id string, cs ...container.Summary) error {
	if cs == nil {
		var err error
		if cs, err = p.find(ctx, id); err != nil {
			return err
		}
	}
	var errs []error
	for _, c := range cs {
		err := p.cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !cerrdefs.IsNotFound(err) { // NotFound: a concurrent Remove won
			errs = append(errs, fmt.Errorf("remove container %s: %w", short(c.ID), engineErr(err)))
		}
	}
	return errors.Join(errs...)
}
