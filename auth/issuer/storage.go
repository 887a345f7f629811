package issuer

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"log/slog"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// storage is our op.Storage (and op.ClientCredentialsStorage). It is a
// separate type from Server so that zitadel's storage methods do not
// become part of the package's exported API.
//
// What lives where: keys, clients, users and refresh tokens in JSON files
// under Config.Dir (state.go); authorization requests and codes in memory
// (storage_authreq.go), since they last minutes and a restart merely asks
// the user to sign in again.
type storage struct {
	cfg       Config
	log       *slog.Logger
	resources resourceSet
	keys      *jsonFile[keysDoc]
	users     *jsonFile[usersDoc]
	refresh   *jsonFile[refreshDoc]
	clients   *clientResolver
	reqs      *authRequests
	devices   *deviceAuthzs
}

var (
	_ op.Storage                  = (*storage)(nil)
	_ op.ClientCredentialsStorage = (*storage)(nil)
)

func newStorage(cfg Config) *storage {
	return &storage{
		cfg:       cfg,
		log:       cfg.Logger,
		resources: resourceSet{list: cfg.Resources},
		keys:      newJSONFile[keysDoc](cfg.Dir, keysFile),
		users:     newJSONFile[usersDoc](cfg.Dir, usersFile),
		refresh:   newJSONFile[refreshDoc](cfg.Dir, refreshFile),
		clients: &clientResolver{
			store:   clientStore{file: newJSONFile[clientsDoc](cfg.Dir, clientsFile)},
			fetch:   cfg.ClientFetcher,
			devMode: cfg.DevMode,
		},
		reqs:    newAuthRequests(),
		devices: newDeviceAuthzs(),
	}
}

// check loads every state file once, so a corrupt file stops New instead
// of the first sign-in.
func (s *storage) check() error {
	if _, err := s.users.Load(); err != nil {
		return err
	}
	if _, err := s.refresh.Load(); err != nil {
		return err
	}
	_, err := s.clients.store.file.Load()
	return err
}

// Health implements op.Storage.
func (s *storage) Health(context.Context) error { return nil }

// The methods below serve endpoints we do not expose (userinfo,
// introspection, JWT profile grants). They refuse rather than pretend.

// SetUserinfoFromScopes implements op.OPStorage. ID tokens carry no
// profile claims, but the subject must be set: zitadel copies the
// userinfo over the ID token claims, sub included.
func (s *storage) SetUserinfoFromScopes(_ context.Context, info *oidc.UserInfo, userID, _ string, _ []string) error {
	info.Subject = userID
	return nil
}

// SetUserinfoFromToken implements op.OPStorage.
func (s *storage) SetUserinfoFromToken(context.Context, *oidc.UserInfo, string, string, string) error {
	return oidc.ErrRequestNotSupported().WithDescription("userinfo is not served")
}

// SetIntrospectionFromToken implements op.OPStorage.
func (s *storage) SetIntrospectionFromToken(context.Context, *oidc.IntrospectionResponse, string, string, string) error {
	return oidc.ErrRequestNotSupported().WithDescription("introspection is not served")
}

// GetPrivateClaimsFromScopes implements op.OPStorage; our access tokens
// are built in issue.go.
func (s *storage) GetPrivateClaimsFromScopes(context.Context, string, string, []string) (map[string]any, error) {
	return nil, nil
}

// GetKeyByIDAndClientID implements op.OPStorage; private_key_jwt client
// authentication is not supported.
func (s *storage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, oidc.ErrInvalidClient().WithDescription("private_key_jwt is not supported")
}

// ValidateJWTProfileScopes implements op.OPStorage; the JWT bearer grant
// is not supported.
func (s *storage) ValidateJWTProfileScopes(context.Context, string, []string) ([]string, error) {
	return nil, oidc.ErrUnsupportedGrantType()
}

// randomBytes returns n bytes from the system CSPRNG, which does not fail
// on any platform Go supports (crypto/rand.Read panics rather than
// returning short).
func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// randomToken returns n random bytes, base64url-encoded without padding.
func randomToken(n int) string {
	return base64.RawURLEncoding.EncodeToString(randomBytes(n))
}

// digest returns the hex SHA-256 of s: how high-entropy secrets (refresh
// tokens, codes) are stored and looked up.
func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
