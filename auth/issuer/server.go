package issuer

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/sandgate/sandgate/auth"
)

// Server is the embedded authorization server.
type Server struct {
	cfg      Config
	log      *slog.Logger
	st       *storage
	provider *op.Provider
	csrf     *csrf
	limits   *failureLimiter // failed logins
	// codeLimits limits wrong user codes at /device.
	codeLimits *failureLimiter
	meta       metadata
	mux        *http.ServeMux
	routes     []string
}

var _ auth.KeySource = (*Server)(nil)

// New opens (or initialises) the state directory and builds the server.
// It creates the first signing key of a new directory; it does not create
// users (see EnsureDevUser).
func New(ctx context.Context, cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := ensureDir(cfg.Dir); err != nil {
		return nil, fmt.Errorf("issuer: %w", err)
	}
	st := newStorage(cfg)
	if err := ensureKeys(st.keys, cfg.AccessTokenTTL); err != nil {
		return nil, fmt.Errorf("issuer: signing keys: %w", err)
	}
	if err := st.check(); err != nil {
		return nil, fmt.Errorf("issuer: %w", err)
	}
	opts := []op.Option{}
	if strings.HasPrefix(cfg.Issuer, "http://") {
		opts = append(opts, op.WithAllowInsecure()) // loopback only; checkIssuer made sure
	}
	// Codes are AES-GCM sealed auth request IDs; the key only has to live
	// as long as the in-memory requests it seals.
	var codeKey [32]byte
	copy(codeKey[:], randomBytes(32))
	provider, err := op.NewProvider(&op.Config{
		CryptoKey:             codeKey,
		CodeMethodS256:        true,
		AuthMethodPost:        true,
		GrantTypeRefreshToken: true,
		SupportedScopes:       cfg.Scopes,
	}, st, op.StaticIssuer(cfg.Issuer), opts...)
	if err != nil {
		return nil, fmt.Errorf("issuer: build provider: %w", err)
	}
	s := &Server{
		cfg:        cfg,
		log:        cfg.Logger,
		st:         st,
		provider:   provider,
		csrf:       newCSRF(strings.HasPrefix(cfg.Issuer, "https://")),
		limits:     newLoginLimiter(),
		codeLimits: newUserCodeLimiter(),
	}
	s.meta = s.buildMetadata()
	s.buildMux()
	s.log.InfoContext(ctx, "authorization server ready", "issuer", cfg.Issuer, "state_dir", cfg.Dir,
		"dcr", cfg.RegisterHandler != nil, "client_metadata_documents", cfg.ClientFetcher != nil)
	return s, nil
}

// buildMux registers every route. The handlers put the issuer into the
// request context, where zitadel's helpers look for it.
func (s *Server) buildMux() {
	s.mux = http.NewServeMux()
	handle := func(path string, h http.Handler) {
		s.mux.Handle(path, h)
		s.routes = append(s.routes, path)
	}
	handle(pathAuthorize, http.HandlerFunc(s.authorize))
	handle(pathLogin, http.HandlerFunc(s.login))
	handle(pathConsent, http.HandlerFunc(s.consent))
	handle(pathToken, cors(http.HandlerFunc(s.token)))
	handle(pathDeviceAuthz, cors(http.HandlerFunc(s.deviceAuthorization)))
	handle(pathDevice, http.HandlerFunc(s.device))
	handle(pathRevoke, cors(http.HandlerFunc(s.revoke)))
	handle(pathJWKS, cors(http.HandlerFunc(s.jwks)))
	handle(pathASMetadata, cors(http.HandlerFunc(s.serveMetadata)))
	handle(pathOIDCConfig, cors(http.HandlerFunc(s.serveMetadata)))
	if s.cfg.RegisterHandler != nil {
		handle(pathRegister, cors(s.cfg.RegisterHandler(s.st.clients.store)))
	}
}

// Handler serves every endpoint of the authorization server at the
// origin's root paths (see Routes).
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = r.WithContext(op.ContextWithIssuer(r.Context(), s.cfg.Issuer))
		s.mux.ServeHTTP(w, r)
	})
}

// Routes lists the exact paths Handler serves, for mounting on the
// gateway's mux. It never includes /mcp, /healthz or the protected
// resource metadata paths.
func (s *Server) Routes() []string {
	return append([]string(nil), s.routes...)
}

// PublicKeys returns the keys tokens are verified with: the current key
// and every retired key that may have signed a token not yet expired. It
// reads keys.json when it changed, so a rotation by another process is
// seen at once.
func (s *Server) PublicKeys(context.Context) ([]auth.PublicKey, error) {
	return s.st.authPublicKeys()
}

// Close releases the server. All durable state is already on disk; the
// in-memory sign-ins in progress are dropped.
func (s *Server) Close() error { return nil }

// jwks serves the published keys as a JWK set (zitadel's op.Keys).
func (s *Server) jwks(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "public, max-age=60")
	op.Keys(w, r, s.st)
}

// revoke is RFC 7009 token revocation through zitadel's op.Revoke, which
// authenticates the client and calls RevokeToken.
func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "use POST", http.StatusMethodNotAllowed)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	op.Revoke(w, r, s.provider)
}

// loginURL is where /authorize sends the browser.
func (s *Server) loginURL(id string) string {
	return s.cfg.Issuer + pathLogin + "?id=" + url.QueryEscape(id)
}
