package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/sandgate/sandgate/gateway/fleet"
	"github.com/sandgate/sandgate/gateway/mcpapi"
)

// Snapshots and forks (fleet/snapshots.go): a snapshot is an immutable
// copy of a sandbox's /workspace that sandbox_create {snapshot} starts
// new sandboxes from; a fork is such a sandbox made at once.

type sandboxSnapshotArgs struct {
	sandboxRefArgs
	Name string `json:"name,omitempty" jsonschema:"What to call the snapshot: 1 to 64 letters, digits, '.', '_' or '-'. Default: the sandbox id's start and the time."`
}

type snapshotRefArgs struct {
	SnapshotID string `json:"snapshot_id" jsonschema:"Snapshot id from sandbox_snapshot or snapshot_list."`
}

type sandboxForkArgs struct {
	sandboxRefArgs
	Count int `json:"count" jsonschema:"How many sandboxes to make, 1 to 100; each counts against your tenant's sandbox quota."`
}

func snapshotTools() []toolDef {
	return []toolDef{
		{category: catSandbox, summary: summarize("sandbox_id", "name"), run: runSandboxSnapshot,
			tool: mcpapi.NewTool("sandbox_snapshot", argsSchema[sandboxSnapshotArgs](), mcpapi.WithReadOnlyHintAnnotation(false), mcpapi.WithDestructiveHintAnnotation(false),
				mcpapi.WithDescription("Copy a sandbox's /workspace, as it is now, into an immutable snapshot that sandbox_create {snapshot} starts new sandboxes from. The sandbox keeps running; its writes wait while the copy is taken. Processes and memory are not part of it. Only your tenant can use the snapshot."))},
		{category: catSandbox, summary: summarize(), run: runSnapshotList,
			tool: mcpapi.NewTool("snapshot_list", argsSchema[struct{}](), mcpapi.WithReadOnlyHintAnnotation(true), mcpapi.WithDestructiveHintAnnotation(false),
				mcpapi.WithDescription("List your tenant's snapshots: id, name, the sandbox and image they were taken of, when, and the bytes each takes on disk."))},
		{category: catSandbox, summary: summarize("snapshot_id"), run: runSnapshotDelete,
			tool: mcpapi.NewTool("snapshot_delete", argsSchema[snapshotRefArgs](), mcpapi.WithReadOnlyHintAnnotation(false), mcpapi.WithDestructiveHintAnnotation(true),
				mcpapi.WithDescription("Delete one of your tenant's snapshots. Sandboxes made from it keep their files."))},
		{category: catSandbox, summary: summarize("sandbox_id", "count"), run: runSandboxFork,
			tool: mcpapi.NewTool("sandbox_fork", argsSchema[sandboxForkArgs](), mcpapi.WithReadOnlyHintAnnotation(false), mcpapi.WithDestructiveHintAnnotation(false),
				mcpapi.WithDescription("Make count new sandboxes (1 to 100), each starting with a copy of this sandbox's /workspace as it is now, with its image and network allowlist, and its own id, limits and expiry. Returns their sandbox_ids, and why any could not be made."))},
	}
}

func runSandboxSnapshot(ctx context.Context, c *call) (*mcpapi.CallToolResult, error) {
	a, err := bind[sandboxSnapshotArgs](c)
	if err != nil {
		return nil, err
	}
	b, err := c.recorded(ctx, a.SandboxID)
	if err != nil {
		return nil, err
	}
	r, err := c.g.boxes.Snapshot(ctx, b, c.p, a.Name)
	if err != nil {
		return nil, err
	}
	holds := "its /workspace"
	if r.Memory {
		holds = "its /workspace and its memory (processes, /tmp, interpreter state, browser)"
	}
	return structured(r, fmt.Sprintf("snapshot %s (%q) of sandbox %s holds %s, %d bytes on disk; sandbox_create {\"snapshot\": %q} starts a sandbox from it", r.ID, r.Name, b.ID(), holds, r.Bytes, r.ID), false), nil
}

func runSnapshotList(_ context.Context, c *call) (*mcpapi.CallToolResult, error) {
	list := c.g.boxes.Snapshots(c.p)
	if list == nil {
		list = []fleet.SnapshotRecord{}
	}
	return structured(map[string]any{"snapshots": list}, jsonText(list), false), nil
}

func runSnapshotDelete(ctx context.Context, c *call) (*mcpapi.CallToolResult, error) {
	a, err := bind[snapshotRefArgs](c)
	if err != nil {
		return nil, err
	}
	if err := c.g.boxes.DeleteSnapshot(ctx, c.p, a.SnapshotID, "snapshot_delete"); err != nil {
		return nil, err
	}
	return structured(map[string]any{"snapshot_id": a.SnapshotID, "deleted": true}, "deleted snapshot "+a.SnapshotID, false), nil
}

// forkResult is one fork in sandbox_fork's answer.
type forkResult struct {
	SandboxID string `json:"sandbox_id,omitempty"`
	// MemoryRestored: the fork started with the source's processes,
	// /tmp, interpreter and browser where they were (gVisor).
	MemoryRestored bool   `json:"memory_restored,omitempty"`
	Error          string `json:"error,omitempty"`
}

func runSandboxFork(ctx context.Context, c *call) (*mcpapi.CallToolResult, error) {
	a, err := bind[sandboxForkArgs](c)
	if err != nil {
		return nil, err
	}
	if a.Count < 1 || a.Count > fleet.MaxForks {
		return nil, fmt.Errorf("count %d: sandbox_fork makes 1 to %d sandboxes", a.Count, fleet.MaxForks)
	}
	b, err := c.recorded(ctx, a.SandboxID)
	if err != nil {
		return nil, err
	}
	boxes, errs, err := c.g.boxes.Fork(ctx, b, c.p, a.Count)
	if err != nil {
		return nil, err
	}
	out := make([]forkResult, len(boxes))
	var made []string
	for i := range boxes {
		if errs[i] != nil {
			out[i].Error = errs[i].Error()
			continue
		}
		out[i].SandboxID, out[i].MemoryRestored = boxes[i].ID(), boxes[i].Info().MemoryKept
		made = append(made, boxes[i].ID())
	}
	text := fmt.Sprintf("forked sandbox %s into %d of %d: %s", b.ID(), len(made), a.Count, strings.Join(made, ", "))
	return structured(map[string]any{"source": b.ID(), "forks": out}, text, len(made) == 0), nil
}
