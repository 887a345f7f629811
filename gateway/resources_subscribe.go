package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/gateway/mcpapi"
	"github.com/sandgate/sandgate/runner/protocol"
)

// resourceService is what the MCP edge asks of the resources besides
// reading one (mcpedge.Resources): the caller's list, completions, and
// subscriptions of both eras, which the watch hub serves.
type resourceService struct{ g *Server }

func (rs resourceService) List(ctx context.Context, cursor string) ([]mcpapi.Resource, string, error) {
	return rs.g.listResources(ctx, cursor)
}

func (rs resourceService) Complete(ctx context.Context, req mcpapi.CompleteRequest) (*mcpapi.Completion, error) {
	return rs.g.completeResource(ctx, req)
}

// Subscribe starts watching uri for subscriber key, after checking that
// the caller may read it: holds its scopes (the edge checked them
// already, and this is the backstop) and owns its sandbox.
func (rs resourceService) Subscribe(ctx context.Context, key any, send mcpapi.Notify, uri string, listChanged bool) error {
	p, session, err := caller(ctx)
	if err != nil {
		return err
	}
	if need := uriScopes(uri); !hasScopes(p, need) {
		return fmt.Errorf("subscribe to %s: your token lacks scope %s", uri, strings.Join(need, " "))
	}
	ref, err := parseSandboxURI(uri)
	if err != nil {
		return fmt.Errorf("%w: %v (only sandbox:// resources can be subscribed to)", mcpapi.ErrResourceNotFound, err)
	}
	b, err := rs.g.resourceBox(ctx, p, session, ref)
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
	return rs.g.watches.subscribe(b, key, send, uri, ref.runnerPath(), listChanged)
}

// WatchWorkspaces sends key's client the list changes of the caller's
// workspaces. They need sandbox:files:read, as their listing in
// resources/list does; without it nothing is watched.
func (rs resourceService) WatchWorkspaces(ctx context.Context, key any, send mcpapi.Notify) bool {
	p, session, err := caller(ctx)
	if err != nil || !hasScopes(p, []string{auth.ScopeFilesRead}) {
		return false
	}
	watched := false
	for _, b := range rs.g.callerBoxes(p, session) {
		if err := rs.g.watches.subscribe(b, key, send, "", "", true); err == nil {
			watched = true
		}
	}
	return watched
}

func (rs resourceService) Unsubscribe(key any, uri string) { rs.g.watches.unsubscribe(key, uri) }
