package tools

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sandgate/sandgate/gateway/mcpapi"

	"github.com/sandgate/sandgate/gateway/fleet"
	"github.com/sandgate/sandgate/runner/protocol"
)

type sandboxCreateArgs struct {
	Image    string       `json:"image,omitempty" jsonschema:"Image to start (default: the gateway's default image). Must be one the operator allowed."`
	Snapshot string       `json:"snapshot,omitempty" jsonschema:"Snapshot id (sandbox_snapshot, snapshot_list) whose /workspace the sandbox starts with; its image is the snapshot's."`
	Network  *networkArgs `json:"network,omitempty" jsonschema:"Network access through the sandbox's egress proxy. Omit it for your tenant's default allowlist; {\"allow\": []} for none."`
}

type networkArgs struct {
	Allow []string `json:"allow" jsonschema:"Destinations the sandbox may reach: host (example.com), *.suffix (subdomains), CIDR or IP, each with an optional :port, :lo-hi or :*. Must lie within what the operator allows your tenant."`
}

type sandboxRefArgs struct {
	SandboxID string `json:"sandbox_id,omitempty" jsonschema:"Sandbox id from sandbox_create; omit it for your MCP session's sandbox or, without a session, this client's default sandbox."`
}

type sandboxPauseArgs struct {
	sandboxRefArgs
	KeepMemory *bool `json:"keep_memory,omitempty" jsonschema:"true: keep the sandbox's memory (its processes, /tmp, interpreter variables and browser carry on when it resumes), or fail where the gateway cannot (sandboxes under runc); false: keep its files only. Default: its memory where the gateway can keep it."`
}

// sandboxInfo is sandbox_info's and sandbox_create's structuredContent.
type sandboxInfo struct {
	SandboxID   string    `json:"sandbox_id"`
	State       string    `json:"state"` // running or paused
	Image       string    `json:"image"`
	ContainerID string    `json:"container_id"`
	CreatedAt   time.Time `json:"created_at"`
	ExpiresAt   time.Time `json:"expires_at"`
	IdleTTL     string    `json:"idle_ttl"`
	// OnIdle is what the idle TTL and the maximum lifetime do to it:
	// "pause" or "destroy".
	OnIdle string `json:"on_idle"`
	// PausedAt and RemovedAt, for a paused sandbox: when it was paused
	// (absent when the gateway restarted since and cannot tell) and
	// when it will be destroyed unless a call resumes it first.
	PausedAt  *time.Time `json:"paused_at,omitempty"`
	RemovedAt *time.Time `json:"removed_at,omitempty"`
	// MemoryKept, for a paused sandbox: its memory was checkpointed and
	// its processes carry on when it resumes; for one sandbox_create just
	// made from a snapshot: it started with the snapshot's memory.
	MemoryKept bool           `json:"memory_kept,omitempty"`
	Limits     map[string]any `json:"limits"`
	Workspace  workspaceInfo  `json:"workspace"`
	Network    networkInfo    `json:"network"`
	Runner     *protocol.Info `json:"runner,omitempty"`
}

// workspaceInfo describes a sandbox's /workspace for sandbox_info.
type workspaceInfo struct {
	// Disk is true when /workspace is its own file system on disk, which
	// survives a replaced runner; false for the tmpfs fallback in RAM.
	Disk       bool  `json:"disk"`
	QuotaBytes int64 `json:"quota_bytes"`          // writes beyond it fail with ENOSPC
	UsedBytes  int64 `json:"used_bytes,omitempty"` // as the runner's statfs reports it
	// HostBytes is what a paused sandbox's workspace takes on the
	// host's disk, counted against its tenant's paused quota.
	HostBytes int64 `json:"host_bytes,omitempty"`
}

func sandboxTools() []toolDef {
	return []toolDef{
		{category: catSandbox, summary: summarize("image"), run: runSandboxCreate,
			tool: mcpapi.NewTool("sandbox_create", argsSchema[sandboxCreateArgs](), mcpapi.WithReadOnlyHintAnnotation(false), mcpapi.WithDestructiveHintAnnotation(false),
				mcpapi.WithDescription("Create a new sandbox (a container with its own /workspace and resource limits, and network only to what its egress allowlist allows) and return its sandbox_id. Pass sandbox_id to the other tools to use it. Required for clients without an MCP session."))},
		{category: catSandbox, summary: summarize("sandbox_id"), run: runSandboxInfo,
			tool: mcpapi.NewTool("sandbox_info", argsSchema[sandboxRefArgs](), mcpapi.WithReadOnlyHintAnnotation(true), mcpapi.WithDestructiveHintAnnotation(false),
				mcpapi.WithDescription("Describe a sandbox: image, limits, expiry, network allowlist, and live resource use (memory, CPU, processes, workspace)."))},
		{category: catSandbox, needsBox: true, summary: summarizeNetwork, run: runSandboxNetwork,
			tool: mcpapi.NewTool("sandbox_network", argsSchema[sandboxNetworkArgs](), mcpapi.WithReadOnlyHintAnnotation(false), mcpapi.WithDestructiveHintAnnotation(false),
				mcpapi.WithDescription("Show a sandbox's network allowlist, or replace it by passing allow (within what the operator allows your tenant). Programs in the sandbox reach the network only through its proxy (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY are set); new connections follow the new list at once."))},
		{category: catSandbox, summary: summarize("sandbox_id"), run: runSandboxPause,
			tool: mcpapi.NewTool("sandbox_pause", argsSchema[sandboxPauseArgs](), mcpapi.WithReadOnlyHintAnnotation(false), mcpapi.WithDestructiveHintAnnotation(true),
				mcpapi.WithIdempotentHintAnnotation(true),
				mcpapi.WithDescription("Pause a sandbox: free its CPU and memory, keeping its /workspace, id, network allowlist and expiry. The next call that uses it resumes it (or call sandbox_resume). Where the gateway runs sandboxes under gVisor their memory is kept too, so processes, /tmp, interpreter state and the browser carry on after the resume; elsewhere they end (keep_memory chooses)."))},
		{category: catSandbox, summary: summarize("sandbox_id"), run: runSandboxResume,
			tool: mcpapi.NewTool("sandbox_resume", argsSchema[sandboxRefArgs](), mcpapi.WithReadOnlyHintAnnotation(false), mcpapi.WithDestructiveHintAnnotation(false),
				mcpapi.WithIdempotentHintAnnotation(true),
				mcpapi.WithDescription("Resume a paused sandbox now, on its kept /workspace, rather than on its next call. A running sandbox is left as it is."))},
		{category: catSandbox, summary: summarize("sandbox_id"), run: runSandboxDestroy,
			tool: mcpapi.NewTool("sandbox_destroy", argsSchema[sandboxRefArgs](), mcpapi.WithReadOnlyHintAnnotation(false), mcpapi.WithDestructiveHintAnnotation(true),
				mcpapi.WithDescription("Destroy a sandbox and everything in it: processes, files, workspace."))},
	}
}

func runSandboxCreate(ctx context.Context, c *call) (*mcpapi.CallToolResult, error) {
	a, err := bind[sandboxCreateArgs](c)
	if err != nil {
		return nil, err
	}
	if a.Snapshot != "" && a.Image != "" {
		return nil, fmt.Errorf("pass image or snapshot, not both: a sandbox made from a snapshot runs the snapshot's image")
	}
	image := a.Image
	if image == "" {
		image = c.g.cfg.Image
	}
	if !slices.Contains(c.g.cfg.Images, image) {
		return nil, fmt.Errorf("image %q is not allowed; choose one of: %s", image, strings.Join(c.g.cfg.Images, ", "))
	}
	allow := c.g.boxes.DefaultAllow(c.p.Tenant)
	if a.Network != nil {
		if allow, err = c.g.boxes.CheckAllow(c.p.Tenant, a.Network.Allow); err != nil {
			return nil, err
		}
	}
	b, err := c.g.boxes.CreateBox(ctx, c.p, fleet.Spec{Session: c.session, Image: image, Allow: allow, Snapshot: a.Snapshot})
	if err != nil {
		return nil, err
	}
	c.end.SandboxID, c.end.ContainerID = b.ID(), b.Info().ContainerID
	info := c.describe(b, nil)
	text := fmt.Sprintf("created sandbox %s (image %s); pass sandbox_id %q to other tools", b.ID(), image, b.ID())
	if b.Info().MemoryKept {
		info.MemoryKept = true
		text += "; it started from the snapshot's memory: the processes, /tmp, interpreter state and browser of the snapshot carry on in it"
	}
	return structured(info, text, false), nil
}

// existing finds the sandbox a sandbox_info/destroy call names without
// creating one: by id, or the session's sandbox if it has one, or the
// client's default sandbox, which the result then notes as every call
// that used it does.
func (c *call) existing(ctx context.Context, id string) (*fleet.Box, error) {
	if id != "" {
		return c.g.boxes.Get(ctx, c.p, c.session, id)
	}
	if c.session == "" {
		b, err := c.g.boxes.FindDefault(ctx, c.p, c.defaultKey())
		if b == nil && err == nil {
			err = fleet.ErrNoSandbox
		}
		if err == nil {
			c.notes = append(c.notes, fleet.UsingNote(b))
		}
		return b, err
	}
	b := c.g.boxes.SessionBox(c.session)
	if b == nil {
		return nil, fmt.Errorf("this session has no sandbox yet; any sandbox tool creates it on first use")
	}
	return c.g.boxes.Get(ctx, c.p, c.session, b.ID())
}

// named finds the sandbox a sandbox_info, _destroy, _pause or _resume
// call names (its one argument, sandbox_id, may be empty: see existing)
// and records it for the call's audit record.
func (c *call) named(ctx context.Context) (*fleet.Box, error) {
	a, err := bind[sandboxRefArgs](c)
	if err != nil {
		return nil, err
	}
	return c.recorded(ctx, a.SandboxID)
}

// recorded is existing, with the sandbox recorded for the call's audit
// record.
func (c *call) recorded(ctx context.Context, id string) (*fleet.Box, error) {
	b, err := c.existing(ctx, id)
	if err != nil {
		return nil, err
	}
	c.end.SandboxID = b.ID()
	return b, nil
}

func runSandboxInfo(ctx context.Context, c *call) (*mcpapi.CallToolResult, error) {
	b, err := c.named(ctx)
	if err != nil {
		return nil, err
	}
	// Another replica may have changed its allowlist since.
	if err := c.g.boxes.RefreshNetwork(ctx, b); isNotFound(err) {
		return nil, err
	}
	var ri *protocol.Info
	if cl, err := b.Acquire(ctx); err == nil {
		var info protocol.Info
		if cl.Call(ctx, protocol.OpInfo, nil, &info) == nil {
			ri = &info
		}
	} else {
		c.g.boxes.PausedElsewhere(ctx, b) // another replica's pause shows
	}
	b.Release()
	info := c.describe(b, ri)
	return structured(info, jsonText(info), false), nil
}

func (c *call) describe(b *fleet.Box, ri *protocol.Info) sandboxInfo {
	l := c.g.cfg.Limits
	inf := b.Info()
	ws := workspaceInfo{Disk: inf.WorkspaceDurable, QuotaBytes: l.WorkspaceBytes}
	if !ws.Disk {
		ws.QuotaBytes = l.TmpfsWorkspaceBytes()
	}
	if ri != nil {
		// The file system's own figure is the enforced one (ext4 keeps a
		// little for its metadata).
		ws.QuotaBytes, ws.UsedBytes = cmp.Or(ri.WorkspaceSizeBytes, ws.QuotaBytes), ri.WorkspaceUsedBytes
	}
	onIdle := fleet.OnIdleDestroy
	if c.g.boxes.Pauses() {
		onIdle = fleet.OnIdlePause
	}
	out := sandboxInfo{SandboxID: b.ID(), State: "running", Image: inf.Image, ContainerID: inf.ContainerID, CreatedAt: inf.CreatedAt, ExpiresAt: b.EndAt(),
		IdleTTL: l.IdleTTL.String(), OnIdle: onIdle}
	if b.Paused() {
		out.State, ws.HostBytes, out.MemoryKept = "paused", inf.DiskBytes, inf.MemoryKept
		if at := b.PausedAt(); !at.IsZero() {
			removed := c.g.boxes.RemovedAt(b)
			out.PausedAt, out.RemovedAt = &at, &removed
		}
	}
	out.Runner, out.Workspace, out.Network = ri, ws, c.g.networkInfo(b)
	out.Limits = map[string]any{"cpus": l.CPUs, "memory_bytes": l.MemoryBytes, "pids": l.Pids, "workspace_bytes": ws.QuotaBytes,
		"tmp_bytes": l.TmpBytes, "call_timeout_s": l.CallTimeout.Seconds()}
	return out
}

func runSandboxDestroy(ctx context.Context, c *call) (*mcpapi.CallToolResult, error) {
	b, err := c.named(ctx)
	if err != nil {
		return nil, err
	}
	c.end.ContainerID = b.Info().ContainerID
	if err := c.g.boxes.Destroy(ctx, b, c.p, "sandbox_destroy"); err != nil {
		return nil, fmt.Errorf("destroy sandbox %s: %w", b.ID(), err)
	}
	return structured(map[string]any{"sandbox_id": b.ID(), "destroyed": true}, "destroyed sandbox "+b.ID(), false), nil
}

func runSandboxPause(ctx context.Context, c *call) (*mcpapi.CallToolResult, error) {
	a, err := bind[sandboxPauseArgs](c)
	if err != nil {
		return nil, err
	}
	b, err := c.recorded(ctx, a.SandboxID)
	if err != nil {
		return nil, err
	}
	c.end.ContainerID = b.Info().ContainerID
	opts := fleet.PauseOptions{Memory: fleet.MemoryChoice(a.KeepMemory)}
	if err := c.g.boxes.Pause(ctx, b, c.p, fleet.ReasonPauseTool, opts); err != nil {
		return nil, err
	}
	kept := b.Info().MemoryKept
	text := fmt.Sprintf("paused sandbox %s: its /workspace is kept; the next call that uses it resumes it", b.ID())
	if kept {
		text = fmt.Sprintf("paused sandbox %s with its memory: the next call that uses it resumes it, and its processes carry on where they were", b.ID())
	}
	return structured(map[string]any{"sandbox_id": b.ID(), "state": "paused", "memory_kept": kept}, text, false), nil
}

func runSandboxResume(ctx context.Context, c *call) (*mcpapi.CallToolResult, error) {
	b, err := c.named(ctx)
	if err != nil {
		return nil, err
	}
	note, err := c.g.boxes.Resume(ctx, b, c.p, "sandbox_resume")
	if err != nil {
		return nil, err
	}
	// Whether this call resumed it is the note's to say, as for any call
	// that finds its sandbox paused.
	c.note(note)
	c.end.ContainerID = b.Info().ContainerID
	return structured(map[string]any{"sandbox_id": b.ID(), "state": "running"}, "sandbox "+b.ID()+" is running", false), nil
}
