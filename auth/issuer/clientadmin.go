package issuer

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sandgate/sandgate/auth"
)

// ClientInfo describes one client for `gateway client list`: a stored
// client (static or dynamic), or a metadata-document client that holds
// refresh tokens (those are fetched, never stored, so tokens are their
// only trace here).
type ClientInfo struct {
	ID           string
	Name         string
	Kind         string // auth.ClientStatic, ClientDynamic, ClientMetadata, or "" if unknown
	CreatedAt    time.Time
	RedirectURIs []string
	GrantTypes   []string
	Scopes       []string
	// RefreshTokens counts the live refresh tokens issued to the client.
	RefreshTokens int
}

// ListClients returns the clients known in dir, oldest first.
func ListClients(dir string) ([]ClientInfo, error) {
	clients, err := newJSONFile[clientsDoc](dir, clientsFile).Load()
	if err != nil {
		return nil, fmt.Errorf("list clients: %w", err)
	}
	tokens, err := newJSONFile[refreshDoc](dir, refreshFile).Load()
	if err != nil {
		return nil, fmt.Errorf("list clients: %w", err)
	}
	byID := map[string]*ClientInfo{}
	for id, rec := range clients.Clients {
		byID[id] = &ClientInfo{ID: id, Name: rec.Name, Kind: rec.Kind, CreatedAt: rec.CreatedAt,
			RedirectURIs: rec.RedirectURIs, GrantTypes: rec.GrantTypes, Scopes: rec.Scopes}
	}
	now := time.Now()
	for _, t := range tokens.Tokens {
		if !t.UsedAt.IsZero() || now.After(t.ExpiresAt) {
			continue
		}
		c, ok := byID[t.ClientID]
		if !ok {
			// RevokeClient leaves a removed client no tokens, so this is
			// a metadata-document client (or clients.json was edited).
			kind := ""
			if isMetadataClientID(t.ClientID, true) {
				kind = auth.ClientMetadata
			}
			c = &ClientInfo{ID: t.ClientID, Kind: kind, CreatedAt: t.AuthTime, Scopes: t.Scopes}
			byID[t.ClientID] = c
		}
		c.RefreshTokens++
		if c.Kind == auth.ClientMetadata && t.AuthTime.Before(c.CreatedAt) {
			c.CreatedAt = t.AuthTime // the first sign-in still live
		}
	}
	out := make([]ClientInfo, 0, len(byID))
	for _, c := range byID {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b ClientInfo) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// RevokeResult says what RevokeClient did.
type RevokeResult struct {
	// Removed reports whether a stored registration was deleted. A
	// metadata-document client has none: it can sign in again, with the
	// user's consent, since its registration is its URL.
	Removed bool
	// RefreshTokens is the number of refresh tokens deleted.
	RefreshTokens int
	// AccessTokenTTL is the longest any server using dir issues access
	// tokens for: how long one already issued could stay valid where the
	// revocation is not checked (see ClientRevoked).
	AccessTokenTTL time.Duration
}

// RevokeClient removes client id from dir, ends its refresh tokens and
// records the revocation, so that a running server refuses the access
// tokens it issued to the client before now (ClientRevoked). It works
// while a server runs: the server reads the files on their next use.
func RevokeClient(dir, id string) (RevokeResult, error) {
	var res RevokeResult
	if err := checkKnown(dir, id); err != nil {
		return res, fmt.Errorf("revoke client: %w", err)
	}
	keys, err := newJSONFile[keysDoc](dir, keysFile).Load()
	if err != nil {
		return res, fmt.Errorf("revoke client %s: %w", id, err)
	}
	res.AccessTokenTTL = time.Duration(keys.TokenTTLSeconds) * time.Second
	if res.AccessTokenTTL <= 0 {
		res.AccessTokenTTL = defaultAccessTokenTTL
	}
	now := time.Now().UTC()
	// Record the revocation first: from here on the client's tokens are
	// refused even if what follows fails, and running it again finishes.
	err = newJSONFile[clientsDoc](dir, clientsFile).Update(func(d *clientsDoc) error {
		_, res.Removed = d.Clients[id]
		delete(d.Clients, id)
		if d.Revoked == nil {
			d.Revoked = map[string]time.Time{}
		}
		d.Revoked[id] = now
		d.pruneRevoked(now, keys.retention())
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("revoke client %s: %w", id, err)
	}
	err = newJSONFile[refreshDoc](dir, refreshFile).Update(func(d *refreshDoc) error {
		for k, t := range d.Tokens {
			if t.ClientID == id {
				delete(d.Tokens, k)
				res.RefreshTokens++
			}
		}
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("revoke client %s: end its refresh tokens: %w", id, err)
	}
	return res, nil
}

// checkKnown returns auth.ErrClientNotFound unless id is stored, holds
// refresh tokens, or names a metadata document (whose access tokens may
// be live without a refresh token).
func checkKnown(dir, id string) error {
	if isMetadataClientID(id, true) {
		return nil
	}
	infos, err := ListClients(dir)
	if err != nil {
		return err
	}
	if slices.ContainsFunc(infos, func(c ClientInfo) bool { return c.ID == id }) {
		return nil
	}
	return fmt.Errorf("%w: %s (see gateway client list)", auth.ErrClientNotFound, id)
}

// pruneRevoked forgets revocations older than retention: every access
// token issued before them has expired.
func (d *clientsDoc) pruneRevoked(now time.Time, retention time.Duration) {
	for id, at := range d.Revoked {
		if now.Sub(at) > retention {
			delete(d.Revoked, id)
		}
	}
}

// ClientRevoked reports whether an access token issued to clientID at
// issuedAt was revoked by RevokeClient. The resource server asks on every
// request (auth.RevocationSource); clients.json is re-read only when it
// changed. A token issued in the second of the revocation counts as
// revoked: iat has whole seconds.
func (s *Server) ClientRevoked(_ context.Context, clientID string, issuedAt time.Time) (bool, error) {
	d, err := s.st.clients.store.file.Load()
	if err != nil {
		return false, err
	}
	at, ok := d.Revoked[clientID]
	return ok && !issuedAt.After(at.Truncate(time.Second)), nil
}
