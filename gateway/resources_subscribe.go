package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/identity"
	"github.com/sandgate/sandgate/gateway/mcpedge"
	"github.com/sandgate/sandgate/runner/protocol"
)

// registerSubscriptions wires resource subscriptions of both eras to the
// watch hub through mcp-go's hooks: resources/subscribe and
// resources/unsubscribe of legacy sessions, and the resourceSubscriptions
// and resourcesListChanged of a 2026-07-28 subscriptions/listen stream.
func (g *Server) registerSubscriptions(hooks *server.Hooks) {
	hooks.AddOnRequestInitialization(g.checkSubscribe)
	hooks.AddAfterUnsubscribe(func(ctx context.Context, _ any, req *mcp.UnsubscribeRequest, _ *mcp.EmptyResult) {
		if s := mcpedge.SessionFrom(ctx); s != "" {
			g.watches.unsubscribe(s, req.Params.URI)
		}
	})
	hooks.AddOnUnregisterSession(func(_ context.Context, s server.ClientSession) { g.watches.unsubscribe(s.SessionID(), "") })
	hooks.AddBeforeSubscriptionsListen(g.listen)
}

// checkSubscribe runs before mcp-go handles a request. For a legacy
// resources/subscribe it checks that the caller may read the resource
// and starts watching it; mcp-go then answers with an empty result. An
// error answers the request instead, as not-found where it is one.
func (g *Server) checkSubscribe(ctx context.Context, _ any, message any) error {
	raw, ok := message.(json.RawMessage)
	if !ok {
		return nil
	}
	var req struct {
		Method string `json:"method"`
		Params struct {
			URI string `json:"uri"`
		} `json:"params"`
	}
	if json.Unmarshal(raw, &req) != nil || req.Method != string(mcp.MethodResourcesSubscribe) || req.Params.URI == "" {
		return nil
	}
	p, session, err := caller(ctx)
	if err != nil || session == "" {
		return err // a modern request: mcp-go refuses resources/subscribe itself
	}
	send := func(method string, params map[string]any) { g.edge.NotifySession(session, method, params) }
	return g.subscribe(ctx, p, session, session, send, req.Params.URI, true)
}

// subscribe starts watching uri for subscriber key, after checking that p
// (calling from session) may read it: holds its scopes (the edge checked
// them already, and this is the backstop) and owns its sandbox.
func (g *Server) subscribe(ctx context.Context, p identity.Identity, session string, key any, send func(string, map[string]any), uri string, listChanged bool) error {
	if need := uriScopes(uri); !hasScopes(p, need) {
		return fmt.Errorf("subscribe to %s: your token lacks scope %s", uri, strings.Join(need, " "))
	}
	ref, err := parseSandboxURI(uri)
	if err != nil {
		return notFound(ctx, fmt.Errorf("%w: %v (only sandbox:// resources can be subscribed to)", errResourceNotFound, err))
	}
	b, err := g.resourceBox(ctx, p, session, ref)
	if err != nil {
		return err
	}
	rc, err := b.Connect(ctx)
	if err != nil {
		return fmt.Errorf("subscribe to %s: %w", uri, err)
	}
	if !rc.Supports(protocol.FeatureWatch) {
		return errors.New("this sandbox's runner predates file watching: create a new sandbox to subscribe to its files")
	}
	return g.watches.subscribe(b, key, send, uri, ref.runnerPath(), listChanged)
}

// listen subscribes a subscriptions/listen stream to what it asked for,
// for as long as the stream lasts. The edge refused a stream naming a
// resource the caller's token may not read (403, as for
// resources/subscribe); resources that are not the caller's are left
// out, as mcp-go offers a hook no way to refuse them. The list changes of
// the caller's workspaces need sandbox:files:read, as their listing in
// resources/list does; without it they are left out too.
func (g *Server) listen(ctx context.Context, _ any, req *mcp.SubscriptionsListenRequest) {
	cs := server.ClientSessionFromContext(ctx)
	p, session, err := caller(ctx)
	if cs == nil || err != nil {
		return
	}
	send := func(method string, params map[string]any) {
		n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{Method: method, Params: mcp.NotificationParams{AdditionalFields: params}}}
		select {
		case cs.NotificationChannel() <- n:
		default: // the stream is not keeping up; a later change notifies again
		}
	}
	want := req.Params.Notifications
	subscribed := false
	for _, uri := range want.ResourceSubscriptions {
		if err := g.subscribe(ctx, p, session, cs, send, uri, false); err != nil {
			g.log.Debug("listen: resource left out", "uri", uri, "error", err)
			continue
		}
		subscribed = true
	}
	if want.ResourcesListChanged && hasScopes(p, []string{auth.ScopeFilesRead}) {
		for _, b := range g.callerBoxes(p, session) {
			if err := g.watches.subscribe(b, cs, send, "", "", true); err == nil {
				subscribed = true
			}
		}
	}
	if subscribed {
		context.AfterFunc(ctx, func() { g.watches.unsubscribe(cs, "") })
	}
}
