package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/sandgate/sandgate/gateway/mcpapi"

	"github.com/sandgate/sandgate/auth/identity"
	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/gateway/fleet"
	"github.com/sandgate/sandgate/gateway/metrics"
	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/sandbox"
)

// call is one tool invocation in flight.
type call struct {
	g       *Toolbox
	p       identity.Identity
	session string
	req     mcpapi.CallToolRequest
	args    map[string]any   // decoded once; see callArguments
	began   time.Time        // when the handler started, for the latency metric
	box     *fleet.Box       // nil for tools that need no sandbox
	notes   []fleet.Note     // added to the result after the payload (see callnote.go)
	runner  *protocol.Client // the box's connection
	end     *audit.Event     // the tool.end record; run fills in outcome details
}

// bind decodes the call's arguments into T.
func bind[T any](c *call) (T, error) {
	var v T
	if err := bindArgs(c.args, &v); err != nil {
		return v, fmt.Errorf("arguments: %w", err)
	}
	return v, nil
}

// handler wraps a toolDef with what every call needs: the caller's
// identity, its sandbox, and the audit records around the work. The
// tool.start record is durable before anything runs and the tool.end
// record before the result is returned; if either cannot be written the
// call is refused or its result withheld, never returned unaudited.
func (g *Toolbox) handler(d toolDef) mcpapi.ToolHandler {
	return func(ctx context.Context, req mcpapi.CallToolRequest) (*mcpapi.CallToolResult, error) {
		p, ok := identity.From(ctx)
		if !ok {
			return nil, errors.New("no principal in request context") // wiring bug
		}
		args := req.Arguments
		c := &call{g: g, p: p, session: req.Session, req: req, args: args, began: time.Now()}
		start := &audit.Event{Kind: audit.KindToolStart, Principal: p, Session: c.session, Tool: d.tool.Name,
			RequestID: uuid.NewString(), Summary: d.summary(args)}
		c.end = &audit.Event{Kind: audit.KindToolEnd, Principal: start.Principal, Session: c.session, Tool: d.tool.Name,
			RequestID: start.RequestID, Summary: start.Summary}

		// Before anything costs in proportion to the arguments: a refused
		// call's record has no digest.
		if ok, wait := g.limits.allow(p.Tenant, time.Now()); !ok {
			return c.deny(ctx, mcpapi.NewToolResultError(fmt.Sprintf("rate limit: your tenant may make %d tool calls a minute; retry in %.1f s", g.cfg.ToolCallsPerMinute, wait.Seconds())), "rate limit")
		}
		start.ArgsDigest = audit.Digest(args)
		c.end.ArgsDigest = start.ArgsDigest
		if err := g.args.check(d.tool.Name, args); err != nil {
			return c.deny(ctx, c.errorResult(err), "invalid arguments")
		}
		if d.needsBox {
			if res := c.attach(ctx, args); res != nil {
				return c.deny(ctx, res, "no usable sandbox")
			}
			defer c.box.Release()
			start.SandboxID, start.ContainerID = c.box.ID(), c.box.Info().ContainerID
			c.end.SandboxID, c.end.ContainerID = start.SandboxID, start.ContainerID
		}
		started := g.recordStart(ctx, d, start)
		if !readOnly(d) {
			if err := <-started; err != nil {
				return g.refuseUnaudited(d, err), nil
			}
		}
		began := time.Now()
		res, err := d.run(ctx, c)
		if err != nil && c.box != nil && retryable(d, err) {
			// The runner died between attach and the request: replace the
			// sandbox and run the call once more there.
			if err = c.reattach(ctx); err == nil {
				res, err = d.run(ctx, c)
			}
		}
		if readOnly(d) {
			if serr := <-started; serr != nil {
				return g.refuseUnaudited(d, serr), nil
			}
		}
		if err != nil && c.box != nil && g.boxes.RemovedDuringCall(ctx, c.box, err) {
			err = fmt.Errorf("%w: destroyed while this call ran", sandbox.ErrNotFound)
		}
		if err != nil {
			res = c.errorResult(err)
		}
		return c.finish(ctx, res, began)
	}
}

// recordStart appends a call's tool.start record and reports on the
// channel once it is durable (or failed).
//
// A call that changes anything waits for it before running, so that a
// crash mid-call still leaves the record of what was being done. A
// read-only call runs while the record is written and waits for it only
// before its result is returned, saving one fsync of latency: a crash in
// between leaves no record of a read whose result nobody received.
func (g *Toolbox) recordStart(ctx context.Context, d toolDef, start *audit.Event) <-chan error {
	done := make(chan error, 1)
	if !readOnly(d) {
		done <- g.audit.Append(ctx, start)
		return done
	}
	go func() { done <- g.audit.Append(context.WithoutCancel(ctx), start) }()
	return done
}

// readOnly reports whether d's tool says it changes nothing.
func readOnly(d toolDef) bool {
	return d.tool.Annotations.ReadOnlyHint
}

// refuseUnaudited is the result of a call whose tool.start record could
// not be written: nothing runs (or is returned) unaudited.
func (g *Toolbox) refuseUnaudited(d toolDef, err error) *mcpapi.CallToolResult {
	g.log.Error("audit append failed; refusing tool call", "tool", d.tool.Name, "error", err)
	return mcpapi.NewToolResultError(fmt.Sprintf("%v: refusing to run %s unaudited; an operator must fix the audit log (%v)", audit.ErrUnavailable, d.tool.Name, err))
}

// attach resolves the call's sandbox and connection; on failure it returns
// the error result to send.
func (c *call) attach(ctx context.Context, args map[string]any) *mcpapi.CallToolResult {
	id, _ := args["sandbox_id"].(string)
	var err error
	switch {
	case id != "":
		c.box, err = c.g.boxes.Get(ctx, c.p, c.session, id)
	case c.session != "":
		c.box, err = c.g.boxes.ForSession(ctx, c.p, c.session)
	default:
		c.box, err = c.forClient(ctx)
	}
	if err != nil {
		return c.errorResult(err)
	}
	b := c.box
	err = c.acquire(ctx)
	if err != nil && id == "" && c.session == "" && b.IsGone() {
		// The default was removed elsewhere (another replica, or its
		// owner's sandbox_destroy there): the client's default is now
		// one that replica made, or a new one.
		if c.box, err = c.forClient(ctx); err == nil {
			err = c.acquire(ctx)
		}
	}
	if err != nil {
		return c.errorResult(err)
	}
	return nil
}

// forClient returns the caller's default sandbox (see gateway/fleet/defaultbox.go) and
// notes which it is. A note from an earlier default (one found gone on
// acquire) gives way to the one the call ends up in.
func (c *call) forClient(ctx context.Context) (*fleet.Box, error) {
	b, note, err := c.g.boxes.ForClient(ctx, c.p, c.defaultKey())
	if err != nil {
		return nil, err
	}
	c.notes = slices.DeleteFunc(c.notes, func(n fleet.Note) bool { return n.Key == fleet.MetaDefaultSandbox })
	c.notes = append(c.notes, note)
	return b, nil
}

// acquire marks c.box busy and connects the call to its runner. A dead
// or unresponsive runner is replaced and the call goes on in the new
// container; the box (id, owner, quota) stays the same. On failure the
// box is released and c.box is nil; on success the caller must release
// it.
func (c *call) acquire(ctx context.Context) error {
	runner, note, err := c.g.boxes.Attach(ctx, c.box, c.p)
	if err != nil {
		c.box = nil
		return err
	}
	c.runner = runner
	c.note(note)
	return nil
}

// note adds n, when it says something, to the call's result: after a
// note already there (a default sandbox's), not in its place.
func (c *call) note(n fleet.Note) {
	if n.Text != "" {
		c.notes = append(c.notes, n)
	}
}

// retryable reports whether a call that failed with err may run again on
// a new connection: when the request never reached the runner nothing ran,
// and a read-only tool may run twice in any case.
func retryable(d toolDef, err error) bool {
	if protocol.NotDelivered(err) {
		return true
	}
	return readOnly(d) && protocol.CodeOf(err) == protocol.CodeUnavailable
}

// reattach connects the call to its sandbox's runner again after the
// connection was lost, replacing the sandbox if its runner is dead (see
// fleet.Recover); the box is still acquired.
func (c *call) reattach(ctx context.Context) error {
	gen := c.box.Generation()
	var err error
	if c.runner, err = c.box.Connect(ctx); err == nil {
		return nil
	}
	note, err := c.g.boxes.Recover(ctx, c.box, gen, c.p, err)
	if err != nil {
		return err
	}
	c.note(note)
	c.runner, err = c.box.Connect(ctx)
	return err
}

// finish writes the tool.end record and returns res, or withholds res when
// the record cannot be written.
func (c *call) finish(ctx context.Context, res *mcpapi.CallToolResult, began time.Time) (*mcpapi.CallToolResult, error) {
	e := c.end
	e.DurationMs = time.Since(began).Milliseconds()
	if e.Outcome == "" {
		e.Outcome = "ok"
		if res.IsError {
			e.Outcome = "error"
		}
	}
	if res.IsError && e.Error == "" {
		e.Error = audit.Clip(res.Text(), 500)
	}
	addNotes(res, c.notes)
	c.g.metrics.ToolCalls.WithLabelValues(e.Tool, e.Outcome).Inc()
	metrics.Since(c.g.metrics.ToolSeconds.WithLabelValues(e.Tool), c.began)
	if err := c.g.audit.Append(context.WithoutCancel(ctx), e); err != nil {
		c.g.log.Error("audit append failed; withholding result", "tool", e.Tool, "error", err)
		return mcpapi.NewToolResultError(fmt.Sprintf("%v: %s ran but its end could not be recorded, so its result is withheld (%v)", audit.ErrUnavailable, e.Tool, err)), nil
	}
	return res, nil
}

// deny records a call refused before it started (bad arguments, no
// sandbox) as tool.denied and returns res.
func (c *call) deny(ctx context.Context, res *mcpapi.CallToolResult, reason string) (*mcpapi.CallToolResult, error) {
	c.end.Kind, c.end.Outcome, c.end.DenyReason = audit.KindToolDenied, audit.OutcomeDenied, reason
	return c.finish(ctx, res, time.Now())
}

// structured returns a result with v as structuredContent and text as the
// text content.
func structured(v any, text string, isError bool) *mcpapi.CallToolResult {
	res := mcpapi.NewToolResultStructured(v, text)
	res.IsError = isError
	return res
}

// jsonText renders v for the text content of tools whose answer is data.
func jsonText(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// defaultKey is the key of the caller's default sandbox: its client is
// the one the request's _meta names (clientInfo), with the caller's
// token (fleet.ClientKey).
func (c *call) defaultKey() string {
	return fleet.ClientKey(c.p, c.req.ClientName)
}
