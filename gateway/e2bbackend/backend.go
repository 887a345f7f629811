package e2bbackend

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/identity"
	"github.com/sandgate/sandgate/gateway/e2b"
	"github.com/sandgate/sandgate/gateway/fleet"
	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/sandbox"
)

// e2bBackend is the E2B API's view of the gateway (e2b.Backend). Its
// sandboxes are the gateway's own boxes, sessionless like those of
// sandbox_create, so one sandbox id works from MCP and from the SDKs.
type e2bBackend struct{ g *Server }

var _ e2b.Backend = e2bBackend{}

// caller is the principal of a control-plane request; the gateway's
// authentication in front of the API put it there.
func (e e2bBackend) caller(ctx context.Context) (identity.Identity, error) {
	p, ok := identity.From(ctx)
	if !ok {
		return identity.Identity{}, errors.New("no principal in request context") // wiring bug
	}
	if e.g.cfg.Auth != nil && !slices.Contains(p.Scopes, auth.ScopeExec) {
		return p, fmt.Errorf("%w: managing sandboxes needs scope %s, which your credential lacks", e2b.ErrForbidden, auth.ScopeExec)
	}
	return p, nil
}

// control runs a control-plane call as the caller, audited.
func (e e2bBackend) control(ctx context.Context, name string, summary map[string]any, b *fleet.Box, fn func(ctx context.Context, p identity.Identity) error) error {
	p, err := e.caller(ctx)
	if err != nil {
		return err
	}
	return e.g.apiCall(ctx, p, b, e2b.Op{Name: name, Scope: auth.ScopeExec, Summary: summary}, func(ctx context.Context) error {
		return fn(ctx, p)
	})
}

// image resolves an E2B template id to an allowed image.
func (e e2bBackend) image(template string) (string, error) {
	if template == "" {
		return e.g.cfg.Image, nil
	}
	if image, ok := e.g.cfg.Templates[template]; ok {
		return image, nil
	}
	if slices.Contains(e.g.cfg.Images, template) {
		return template, nil
	}
	known := slices.Sorted(maps.Keys(e.g.cfg.Templates))
	return "", fmt.Errorf("%w: template %q is not available here; use one of: %s (or an allowed image: %s)",
		e2b.ErrInvalid, template, strings.Join(known, ", "), strings.Join(e.g.cfg.Images, ", "))
}

func (e e2bBackend) Create(ctx context.Context, req e2b.CreateRequest) (e2b.Sandbox, error) {
	var out e2b.Sandbox
	err := e.control(ctx, "sandbox.create", map[string]any{"template": req.Template}, nil, func(ctx context.Context, p identity.Identity) error {
		image, err := e.image(req.Template)
		var snapshot string
		if err != nil {
			// A snapshot of the caller's tenant is a template too.
			snap, serr := e.snapshot(p, req.Template)
			if serr != nil {
				return err
			}
			image, snapshot = snap.Image, snap.ID
		}
		allow := e.g.boxes.DefaultAllow(p.Tenant)
		if req.Allow != nil {
			if allow, err = e.g.boxes.CheckAllow(p.Tenant, req.Allow); err != nil {
				return fmt.Errorf("%w: %v", e2b.ErrInvalid, err)
			}
		}
		// The template and metadata are kept in the provider's record,
		// the timeout where the allowlist is (deadline.go), so that a
		// restarted gateway and every replica report them.
		lifecycle := sandbox.Lifecycle{PauseOnTimeout: req.PauseOnTimeout, AutoResume: req.AutoResume,
			FilesOnly: fleet.MemoryChoice(req.KeepMemory) == fleet.MemoryDrop}
		if lifecycle.PauseOnTimeout && !e.g.boxes.CanPause() {
			return fmt.Errorf("lifecycle.onTimeout 'pause': %w", fleet.ErrCannotPause)
		}
		if can, why := e.g.boxes.KeepsMemory(); lifecycle.PauseOnTimeout && fleet.MemoryChoice(req.KeepMemory) == fleet.MemoryKeep && !can {
			return e2b.KeepMemoryError(why)
		}
		b, err := e.g.boxes.CreateBox(ctx, p, fleet.Spec{Image: image, Allow: allow, Template: cmp.Or(req.Template, "base"), Metadata: req.Metadata,
			Lifecycle: lifecycle, Snapshot: snapshot})
		if err != nil {
			return categorize(err)
		}
		if req.Timeout > 0 {
			if _, err := e.g.boxes.SetDeadline(ctx, b, time.Now().Add(req.Timeout)); err != nil {
				_ = e.g.boxes.Destroy(ctx, b, p, "its timeout could not be kept")
				return err
			}
		}
		out = e.describe(b, p)
		return nil
	})
	return out, err
}

func (e e2bBackend) Get(ctx context.Context, id string) (e2b.Sandbox, error) {
	var out e2b.Sandbox
	err := e.control(ctx, "sandbox.get", map[string]any{"sandbox_id": id}, nil, func(ctx context.Context, p identity.Identity) error {
		b, err := e.owned(ctx, p, id)
		if err == nil {
			e.g.boxes.RefreshDeadline(ctx, b)
			out = e.describe(b, p)
		}
		return err
	})
	return out, err
}

func (e e2bBackend) List(ctx context.Context) ([]e2b.Sandbox, error) {
	var out []e2b.Sandbox
	err := e.control(ctx, "sandbox.list", nil, nil, func(ctx context.Context, p identity.Identity) error {
		boxes, err := e.g.boxes.Sessionless(ctx, p)
		for _, b := range boxes {
			out = append(out, e.describe(b, p))
		}
		slices.SortFunc(out, func(a, b e2b.Sandbox) int {
			return cmp.Or(a.StartedAt.Compare(b.StartedAt), cmp.Compare(a.ID, b.ID))
		})
		return err
	})
	return out, err
}

func (e e2bBackend) Kill(ctx context.Context, id string) error {
	return e.control(ctx, "sandbox.kill", map[string]any{"sandbox_id": id}, nil, func(ctx context.Context, p identity.Identity) error {
		b, err := e.owned(ctx, p, id)
		if err != nil {
			return err
		}
		if err := e.g.boxes.Destroy(ctx, b, p, "killed through the E2B API"); err != nil {
			return fmt.Errorf("kill sandbox %s: %w", id, err)
		}
		return nil
	})
}

func (e e2bBackend) SetTimeout(ctx context.Context, id string, timeout time.Duration) (e2b.Sandbox, error) {
	var out e2b.Sandbox
	err := e.control(ctx, "sandbox.timeout", map[string]any{"sandbox_id": id, "timeout_s": int64(timeout.Seconds())}, nil, func(ctx context.Context, p identity.Identity) error {
		if timeout <= 0 {
			return fmt.Errorf("%w: timeout must be a positive number of seconds", e2b.ErrInvalid)
		}
		b, err := e.owned(ctx, p, id)
		if err != nil {
			return err
		}
		if _, err := e.g.boxes.SetDeadline(ctx, b, time.Now().Add(timeout)); err != nil {
			return err
		}
		out = e.describe(b, p)
		return nil
	})
	return out, err
}

func (e e2bBackend) SetNetwork(ctx context.Context, id string, allow []string) (e2b.Sandbox, error) {
	var out e2b.Sandbox
	err := e.control(ctx, "sandbox.network", map[string]any{"sandbox_id": id, "allow": strings.Join(allow, ",")}, nil, func(ctx context.Context, p identity.Identity) error {
		b, err := e.owned(ctx, p, id)
		if err != nil {
			return err
		}
		rules, err := e.g.boxes.CheckAllow(b.Tenant, allow)
		if err != nil {
			return fmt.Errorf("%w: %v", e2b.ErrInvalid, err)
		}
		if _, err := e.g.boxes.SetAllow(ctx, b, rules); err != nil {
			return err
		}
		out = e.describe(b, p)
		return nil
	})
	return out, err
}

// owned finds one of p's sessionless sandboxes. A sandbox bound to an
// MCP session belongs to that session and is not visible here.
func (e e2bBackend) owned(ctx context.Context, p identity.Identity, id string) (*fleet.Box, error) {
	b, err := e.g.boxes.Get(ctx, p, "", id)
	if err != nil {
		return nil, err
	}
	if b.IsGone() {
		return nil, fmt.Errorf("sandbox %q: %w", id, sandbox.ErrNotFound)
	}
	return b, nil
}

// describe reports b to its owner p, with an access token carrying p's
// scopes.
func (e e2bBackend) describe(b *fleet.Box, p identity.Identity) e2b.Sandbox {
	inf := b.Info()
	l := e.g.cfg.Limits
	// A sandbox made otherwise than by the E2B API has no template: its
	// image stands for one.
	return e2b.Sandbox{ID: b.ID(), Template: cmp.Or(inf.Template, inf.Image), Image: inf.Image, StartedAt: inf.CreatedAt, EndAt: b.EndAt(),
		CPUCount: l.CPUs, MemoryMB: l.MemoryBytes >> 20, DiskMB: l.WorkspaceBytes >> 20, Metadata: maps.Clone(inf.Metadata),
		Allow: b.Gate.Allow().Strings(), AccessToken: e.g.accessToken(b, p.Scopes),
		Paused: b.Paused(), PauseOnTimeout: inf.Lifecycle.PauseOnTimeout, AutoResume: inf.Lifecycle.AutoResume}
}

// Open finds the sandbox a data-plane request for op names and checks its
// access token. Anyone holding the token acts as the sandbox's creator,
// within the scopes the token grants, for as long as the credential that
// created the sandbox is not revoked. Every refusal is audited
// (e2b_denied.go) and answered alike: not found.
func (e e2bBackend) Open(ctx context.Context, id, token, op string) (e2b.Runner, error) {
	r, reason := e.open(ctx, id, token)
	if reason == "paused" {
		// The token is the sandbox's: its holder may know it is paused.
		return nil, fmt.Errorf("sandbox %s is %w at its owner's request and resumes only when asked: call Sandbox.connect(%q), or create it with lifecycle {onTimeout: 'pause', autoResume: true}", id, e2b.ErrPaused, id)
	}
	if reason != "" {
		e.g.denyData(ctx, identity.Identity{}, id, op, reason)
		return nil, fmt.Errorf("sandbox %q: %w (or the access token is not this sandbox's)", id, sandbox.ErrNotFound)
	}
	return r, nil
}

// open is Open without the audit: the runner, or why there is none.
func (e e2bBackend) open(ctx context.Context, id, token string) (*e2bRunner, string) {
	switch {
	case id == "":
		return nil, "no sandbox id"
	case token == "":
		return nil, "no access token"
	}
	b, err := e.g.boxes.ByAccess(ctx, id)
	if err != nil {
		return nil, "no such sandbox"
	}
	scopes, ok := e.g.accessScopes(b, token)
	switch {
	case !ok:
		return nil, "access token not valid for this sandbox"
	case b.IsGone():
		return nil, "sandbox is gone"
	}
	if revoked := e.g.cfg.OwnerRevoked; revoked != nil {
		switch gone, err := revoked(b.Owner); {
		case err != nil:
			return nil, "could not check the credential that created the sandbox: " + err.Error()
		case gone:
			return nil, "the API key that created the sandbox is revoked"
		}
	}
	if b.WaitsForResume() {
		return nil, "paused"
	}
	who := b.Creator
	p := identity.Identity{Issuer: who.Issuer, Subject: who.Subject, Tenant: cmp.Or(who.Tenant, b.Tenant), ClientID: who.ClientID, Scopes: scopes}
	return &e2bRunner{g: e.g, b: b, p: p}, ""
}

// e2bRunner runs data-plane calls in one sandbox (e2b.Runner).
type e2bRunner struct {
	g *Server
	b *fleet.Box
	p identity.Identity // the creator, with the token's scopes
}

func (r *e2bRunner) ID() string { return r.b.ID() }

func (r *e2bRunner) Do(ctx context.Context, op e2b.Op, fn func(ctx context.Context, c *protocol.Client) error) error {
	if r.g.cfg.Auth != nil && !slices.Contains(r.p.Scopes, op.Scope) {
		r.g.denyData(ctx, r.p, r.b.ID(), op.Name, "insufficient scope: needs "+op.Scope)
		return fmt.Errorf("%w: %s needs scope %s, which this sandbox's access token does not grant", e2b.ErrForbidden, op.Name, op.Scope)
	}
	return r.g.apiCall(ctx, r.p, r.b, op, func(ctx context.Context) error {
		runner, _, err := r.g.boxes.AttachTraffic(ctx, r.b, r.p)
		if errors.Is(err, fleet.ErrWaitsForResume) {
			return fmt.Errorf("%w: %w", e2b.ErrPaused, err)
		}
		if err != nil {
			return err
		}
		defer r.b.Release()
		return fn(ctx, runner)
	})
}

// OpenRegular opens a file of the sandbox on this host's disk for a
// download (e2b.HostReader); it fails where read_file would ask the
// runner (see readFile), and the download then goes through the runner.
func (r *e2bRunner) OpenRegular(path string) (*os.File, fs.FileInfo, error) {
	return r.g.cfg.OpenRegular(r.b, path)
}

// categorize wraps the gateway's own error categories in the E2B API's.
func categorize(err error) error {
	if errors.Is(err, fleet.ErrQuota) || errors.Is(err, fleet.ErrPausedQuota) {
		return fmt.Errorf("%w: %v", e2b.ErrQuota, err)
	}
	return err
}
