package issuer

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/clients"
)

// metadataCacheTTL bounds how long a fetched client ID metadata document
// is reused here. One authorization makes several lookups (authorize,
// login, consent, token); this cache collapses them. It is short because
// the fetcher keeps its own cache with the document's Cache-Control.
const (
	metadataCacheTTL  = time.Minute
	maxCachedMetadata = 1000
)

// clientResolver finds clients: stored ones in clients.json, and
// metadata-document ones (the client_id is an https URL) through the
// configured fetcher.
type clientResolver struct {
	store   clientStore
	fetch   func(ctx context.Context, clientID string) (auth.ClientRecord, error)
	devMode bool

	mu    sync.Mutex
	cache map[string]cachedClient
}

type cachedClient struct {
	rec     auth.ClientRecord
	expires time.Time
}

// lookup returns the client with the given ID.
func (r *clientResolver) lookup(ctx context.Context, id string) (auth.ClientRecord, error) {
	if !isMetadataClientID(id, r.devMode) {
		return r.store.GetClient(ctx, id)
	}
	if r.fetch == nil {
		return auth.ClientRecord{}, fmt.Errorf("%w: %s (client ID metadata documents are disabled)", auth.ErrClientNotFound, id)
	}
	now := time.Now()
	r.mu.Lock()
	c, ok := r.cache[id]
	r.mu.Unlock()
	if ok && now.Before(c.expires) {
		return c.rec, nil
	}
	rec, err := r.fetch(ctx, id)
	if err != nil {
		return auth.ClientRecord{}, fmt.Errorf("fetch client metadata document %s: %w", id, err)
	}
	// A metadata client is public: nobody could have given it a secret.
	if rec.ID != id || rec.SecretHash != "" || (rec.AuthMethod != "" && rec.AuthMethod != auth.AuthMethodNone) {
		return auth.ClientRecord{}, fmt.Errorf("%w: document for %s must describe that client_id as a public client", auth.ErrInvalidClientMetadata, id)
	}
	rec.Kind, rec.AuthMethod = auth.ClientMetadata, auth.AuthMethodNone
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cache == nil || len(r.cache) >= maxCachedMetadata {
		r.cache = map[string]cachedClient{}
	}
	r.cache[id] = cachedClient{rec: rec, expires: now.Add(metadataCacheTTL)}
	return rec, nil
}

// isMetadataClientID reports whether id names a client ID metadata
// document: an https URL, or in dev mode an http URL on a loopback host.
func isMetadataClientID(id string, devMode bool) bool {
	u, err := url.Parse(id)
	if err != nil || u.Host == "" {
		return false
	}
	return u.Scheme == "https" || devMode && u.Scheme == "http" && isLoopbackHost(u.Hostname())
}

// GetClientByClientID implements op.OPStorage.
func (s *storage) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	rec, err := s.clients.lookup(ctx, id)
	if err != nil {
		return nil, oidc.ErrInvalidClient().WithDescription("unknown client").WithParent(err)
	}
	return s.opClient(rec), nil
}

// AuthorizeClientIDSecret checks a confidential client's secret against
// its bcrypt hash.
func (s *storage) AuthorizeClientIDSecret(ctx context.Context, id, secret string) error {
	rec, err := s.clients.lookup(ctx, id)
	if err != nil {
		return err
	}
	return checkSecret(rec, secret)
}

func checkSecret(rec auth.ClientRecord, secret string) error {
	if rec.SecretHash == "" {
		return errors.New("client " + rec.ID + " has no secret")
	}
	if !clients.CheckSecret(rec.SecretHash, secret) {
		return errors.New("wrong secret for client " + rec.ID)
	}
	return nil
}

// ClientCredentials authenticates a client for the client_credentials
// grant. Only static clients qualify: anyone may register a dynamic
// client, and must not thereby mint tokens without a user.
func (s *storage) ClientCredentials(ctx context.Context, id, secret string) (op.Client, error) {
	rec, err := s.clients.lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := checkSecret(rec, secret); err != nil {
		return nil, err
	}
	if rec.Kind != auth.ClientStatic {
		return nil, oidc.ErrUnauthorizedClient().WithDescription("only clients created by the operator may use client_credentials")
	}
	return s.opClient(rec), nil
}

// ClientCredentialsTokenRequest grants the requested scopes the client
// holds (all it holds when it names none) and binds the request to the
// resource the token endpoint validated. Asking for more is not an error
// (RFC 6749 §3.3): the MCP Python SDK asks for the scopes of the 401's
// WWW-Authenticate, whatever the client holds, and the response's scope
// tells it what it got. Protocol scopes mean nothing here (no user, no
// refresh token) and are dropped.
func (s *storage) ClientCredentialsTokenRequest(ctx context.Context, id string, scopes []string) (op.TokenRequest, error) {
	rec, err := s.clients.lookup(ctx, id)
	if err != nil {
		return nil, oidc.ErrInvalidClient().WithParent(err)
	}
	held := s.grantable(rec)
	var named, granted []string
	for _, sc := range scopes {
		if isProtocolScope(sc) {
			continue
		}
		named = append(named, sc)
		if slices.Contains(held, sc) {
			granted = append(granted, sc)
		}
	}
	if len(named) == 0 {
		granted = held
	}
	if len(granted) == 0 {
		return nil, oidc.ErrInvalidScope().WithDescription("this client holds none of the requested scopes; it holds: %s", strings.Join(held, " "))
	}
	return &clientGrant{clientID: id, scopes: dedupe(granted), resource: s.resources.fromContext(ctx)}, nil
}

// clientGrant is a client_credentials token request: the client acts for
// itself, so it is both the subject and the tenant.
type clientGrant struct {
	clientID string
	scopes   []string
	resource string
}

func (g *clientGrant) GetSubject() string    { return g.clientID }
func (g *clientGrant) GetAudience() []string { return []string{g.resource} }
func (g *clientGrant) GetScopes() []string   { return g.scopes }
func (g *clientGrant) GetClientID() string   { return g.clientID }
func (g *clientGrant) tenantID() string      { return g.clientID }
