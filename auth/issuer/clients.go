package issuer

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/sandgate/sandgate/auth"
)

const clientsFile = "clients.json"

// staticClientPrefix starts every AddClient client ID. User names may not
// start with it, so a CI client and a person never share a subject.
const staticClientPrefix = auth.StaticClientPrefix

// maxStoredClients bounds clients.json: registration is open to anyone
// who can reach /register.
const maxStoredClients = 10000

// clientsDoc is clients.json: static and dynamically registered clients.
// Metadata-document clients are never stored; they are fetched.
type clientsDoc struct {
	Clients map[string]auth.ClientRecord `json:"clients"`
	// Revoked maps a client ID to when RevokeClient ran: access tokens
	// issued to it before then are refused. Entries go once every such
	// token has expired.
	Revoked map[string]time.Time `json:"revoked,omitempty"`
}

// AddClient creates a confidential client in dir for the
// client_credentials grant (CI jobs), limited to scopes. The secret is
// returned once and stored only as a bcrypt hash.
func AddClient(dir, name string, scopes []string) (clientID, secret string, err error) {
	if len(scopes) == 0 {
		return "", "", errors.New("add client: give at least one scope, e.g. " + auth.ScopeExec)
	}
	for _, s := range scopes {
		if !slices.Contains(auth.AllScopes, s) {
			return "", "", fmt.Errorf("add client: unknown scope %q; known scopes: %s", s, strings.Join(auth.AllScopes, " "))
		}
	}
	if err := ensureDir(dir); err != nil {
		return "", "", err
	}
	clientID = staticClientPrefix + hex.EncodeToString(randomBytes(12))
	secret = randomToken(32)
	hash, err := bcrypt.GenerateFromPassword([]byte(secret), bcryptCost)
	if err != nil {
		return "", "", fmt.Errorf("add client: hash secret: %w", err)
	}
	rec := auth.ClientRecord{
		ID:         clientID,
		Kind:       auth.ClientStatic,
		Name:       name,
		SecretHash: string(hash),
		GrantTypes: []string{auth.GrantClientCreds},
		AuthMethod: auth.AuthMethodBasic,
		Scopes:     slices.Clone(scopes),
		CreatedAt:  time.Now().UTC(),
	}
	store := clientStore{file: newJSONFile[clientsDoc](dir, clientsFile)}
	if err := store.put(rec); err != nil {
		return "", "", fmt.Errorf("add client: %w", err)
	}
	return clientID, secret, nil
}

// clientStore keeps static and dynamic clients in clients.json. It is the
// auth.ClientStore handed to Config.RegisterHandler.
type clientStore struct {
	file *jsonFile[clientsDoc]
}

var _ auth.ClientStore = clientStore{}

// PutClient stores a registered client. Metadata-document clients are
// refused (they are fetched, never stored), and a record may not replace
// one of another kind: registration must never overwrite a static client.
func (c clientStore) PutClient(_ context.Context, rec auth.ClientRecord) error {
	switch {
	case rec.ID == "":
		return fmt.Errorf("%w: empty client_id", auth.ErrInvalidClientMetadata)
	case strings.Contains(rec.ID, "://"):
		return fmt.Errorf("%w: a stored client_id must not be a URL", auth.ErrInvalidClientMetadata)
	case rec.Kind != auth.ClientDynamic && rec.Kind != auth.ClientStatic:
		return fmt.Errorf("%w: cannot store a client of kind %q", auth.ErrInvalidClientMetadata, rec.Kind)
	}
	return c.put(rec)
}

func (c clientStore) put(rec auth.ClientRecord) error {
	return c.file.Update(func(d *clientsDoc) error {
		if d.Clients == nil {
			d.Clients = map[string]auth.ClientRecord{}
		}
		old, exists := d.Clients[rec.ID]
		if exists && old.Kind != rec.Kind {
			return fmt.Errorf("%w: client %s exists with kind %s", auth.ErrInvalidClientMetadata, rec.ID, old.Kind)
		}
		if !exists && len(d.Clients) >= maxStoredClients {
			return fmt.Errorf("store client: %d clients are registered, the most this server keeps", maxStoredClients)
		}
		d.Clients[rec.ID] = rec
		return nil
	})
}

// GetClient returns a stored client or auth.ErrClientNotFound.
func (c clientStore) GetClient(_ context.Context, id string) (auth.ClientRecord, error) {
	d, err := c.file.Load()
	if err != nil {
		return auth.ClientRecord{}, err
	}
	rec, ok := d.Clients[id]
	if !ok {
		return auth.ClientRecord{}, fmt.Errorf("%w: %s", auth.ErrClientNotFound, id)
	}
	return rec, nil
}
