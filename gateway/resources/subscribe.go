package resources

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/gateway/mcpapi"
	"github.com/sandgate/sandgate/runner/protocol"
)

// What the MCP edge asks of the resources besides reading one
// (mcpedge.Resources): the caller's list (resources_list.go),
// completions (completion.go), and subscriptions of both eras, which the
// watch hub serves.

// Subscribe starts watching uri for subscriber key, after checking that
// the caller may read it: holds its scopes (the edge checked them
// already, and this is the backstop) and owns its sandbox.
func (g *Service) Subscribe(ctx context.Context, key any, send mcpapi.Notify, uri string, listChanged bool) error {
	p, session, err := caller(ctx)
	if err != nil {
		return err
	}
	if need := URIScopes(uri); !hasScopes(p, need) {
		return fmt.Errorf("subscribe to %s: your token lacks scope %s", uri, strings.Join(need, " "))
	}
	ref, err := parseSandboxURI(uri)
	if err != nil {
		return fmt.Errorf("%w: %v (only sandbox:// resources can be subscribed to)", mcpapi.ErrResourceNotFound, err)
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

// WatchWorkspaces sends key's client the list changes of the caller's
// workspaces. They need sandbox:files:read, as their listing in
// resources/list does; without it nothing is watched.
func (g *Service) WatchWorkspaces(ctx context.Context, key any, send mcpapi.Notify) bool {
	p, session, err := caller(ctx)
	if err != nil || !hasScopes(p, []string{auth.ScopeFilesRead}) {
		return false
	}
	watched := false
	for _, b := range g.callerBoxes(p, session) {
		if err := g.watches.subscribe(b, key, send, "", "", true); err == nil {
			watched = true
		}
	}
	return watched
}

func (g *Service) Unsubscribe(key any, uri string) { g.watches.unsubscribe(key, uri) }
