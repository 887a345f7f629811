package fleet

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	"github.com/sandgate/sandgate/auth/identity"
	"github.com/sandgate/sandgate/sandbox"
)

// A sessionless (2026-07-28) client has no Mcp-Session-Id to hang a
// sandbox on. Rather than failing its first sandbox tool call, the
// gateway gives each (principal, client) pair a default sandbox, created
// on first use and used whenever a call omits sandbox_id. It is an
// ordinary sandbox: not bound to a session (so its id works anywhere its
// owner calls from), counted against the tenant's quota, and removed
// after the idle TTL or the maximum lifetime like any other. When it is
// gone the next call creates a new one and says so.
//
// The client is what the request carries: the OAuth client id of the
// token and the clientInfo name a 2026-07-28 request declares in _meta
// (io.modelcontextprotocol/clientInfo). clientInfo is self-asserted and
// optional; it only separates one principal's clients, never two
// principals, because the owner digest is part of the key.
//
// Which sandbox is a client's default is recorded in the provider, on
// the sandbox (sandbox.Spec.Client, a label; the claim record of a
// pooled one, claims.go), not only in this gateway's memory (byClient,
// a cache). So a restarted gateway adopts it as the default again
// (lifecycle.go), and a replica that has none in memory looks the
// client's defaults up in the provider (sharedDefault). Two replicas
// that create a client's default at once both look again after
// creating, and both keep the oldest (by CreatedAt, then id: every
// replica sees the same order): the newer ones are destroyed by their
// creators (keepOldest). What is left is admit's caveat (replicas.go):
// a record with an earlier CreatedAt that another replica sees only
// after its own look (clocks apart by more than a creation takes) lets
// both keep theirs, and the client has two defaults until one is gone.

// ClientKey is the key of p's default sandbox for the client that
// declares name (clientInfo) with p's token.
func ClientKey(p identity.Identity, name string) string {
	sum := sha256.Sum256([]byte(p.Digest() + "\x00" + p.ClientID + "\x00" + name))
	return hex.EncodeToString(sum[:16])
}

// defaultBox returns the live default sandbox of key this gateway
// tracks, or nil.
func (m *Fleet) defaultBox(p identity.Identity, key string) *Box {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.byClient[key]
	if b == nil || b.IsGone() || m.byID[b.ID()] != b || b.Owner != p.Digest() {
		return nil
	}
	return b
}

// FindDefault returns p's default sandbox for key without creating one:
// the one this gateway tracks or, on a replicated gateway, the one the
// provider records (adopted). It returns nil when there is none.
func (m *Fleet) FindDefault(ctx context.Context, p identity.Identity, key string) (*Box, error) {
	if b := m.defaultBox(p, key); b != nil {
		return b, nil
	}
	return m.records.findDefault(ctx, p, key)
}

// ForClient returns p's default sandbox for key, creating it when there
// is none (or it is gone), and the note that tells the caller which one
// it got. Concurrent first calls of one client wait for one creation.
func (m *Fleet) ForClient(ctx context.Context, p identity.Identity, key string) (*Box, Note, error) {
	wait := "default/" + key // m.creating is shared with sessions; their ids are UUIDs
	for {
		if b := m.defaultBox(p, key); b != nil {
			return b, UsingNote(b), nil
		}
		m.mu.Lock()
		old := m.byClient[key]
		done, busy := m.creating[wait]
		if !busy {
			done = make(chan struct{})
			m.creating[wait] = done
			m.mu.Unlock()
			b, made, err := m.findOrCreate(ctx, p, key)
			m.mu.Lock()
			delete(m.creating, wait)
			if err == nil {
				m.byClient[key] = b
			}
			m.mu.Unlock()
			close(done)
			if err != nil {
				return nil, Note{}, err
			}
			if !made {
				return b, foundNote(old, b), nil
			}
			return b, createdNote(old, b), nil
		}
		m.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return nil, Note{}, ctx.Err()
		}
	}
}

// findOrCreate returns the default the records hold that this gateway
// does not track (another replica's) or else a new one, and reports
// whether it made it.
func (m *Fleet) findOrCreate(ctx context.Context, p identity.Identity, key string) (*Box, bool, error) {
	if b, err := m.records.findDefault(ctx, p, key); b != nil || err != nil {
		return b, false, err
	}
	b, err := m.CreateBox(ctx, p, Spec{Client: key, Image: m.cfg.Image, Allow: m.DefaultAllow(p.Tenant)})
	return m.records.settleDefault(ctx, p, key, b, err)
}

// KeepOldest checks, after b was made as p's default for key, whether
// the provider records an older default of the client (another replica
// made one at the same time). If so, b is destroyed and the oldest is
// used. Should the check fail, b is kept: a duplicate default costs a
// quota slot until it idles out, not a wrong answer.
func (m *Fleet) KeepOldest(ctx context.Context, p identity.Identity, key string, b *Box) (*Box, bool, error) {
	infos, err := m.defaults(ctx, p, key)
	if err != nil {
		m.log.Warn("look for a client's other default sandboxes; keeping this one", "sandbox_id", b.ID(), "error", err)
		return b, true, nil
	}
	if len(infos) == 0 || infos[0].ID == b.ID() {
		return b, true, nil
	}
	m.log.Info("another replica made this client's default sandbox at the same time; keeping the older", "sandbox_id", b.ID(), "kept", infos[0].ID)
	_ = m.Destroy(ctx, b, p, "duplicate default sandbox")
	older, err := m.sharedDefault(ctx, p, key)
	if err != nil || older == nil {
		return nil, false, cmp.Or(err, fmt.Errorf("your default sandbox %s: %w", infos[0].ID, sandbox.ErrNotFound))
	}
	return older, false, nil
}

// sharedDefault finds p's oldest default sandbox for key in the
// provider and adopts it (lookup), waiting first for one another replica
// is still starting. It returns nil when the provider records none.
func (m *Fleet) sharedDefault(ctx context.Context, p identity.Identity, key string) (*Box, error) {
	for range 3 { // a default removed while this looked: look again
		infos, err := m.defaults(ctx, p, key)
		if err != nil || len(infos) == 0 {
			return nil, err
		}
		if err := m.awaitRunner(ctx, infos[0]); isNotFound(err) {
			continue
		} else if err != nil {
			return nil, err
		}
		b, err := m.lookup(ctx, p, "", infos[0].ID)
		if isNotFound(err) {
			continue
		}
		return b, err
	}
	return nil, nil
}

// defaults returns the live default sandboxes of p for key that the
// provider records, oldest first (by CreatedAt, then id).
func (m *Fleet) defaults(ctx context.Context, p identity.Identity, key string) ([]sandbox.Info, error) {
	ctx, cancel := context.WithTimeout(ctx, recordTimeout)
	defer cancel()
	infos, err := m.provider.List(ctx, sandbox.Filter{Owner: p.Digest(), Client: key})
	if err != nil {
		return nil, fmt.Errorf("look up your default sandbox: %w", err)
	}
	now := time.Now()
	infos = slices.DeleteFunc(infos, func(info sandbox.Info) bool {
		return info.Owner != p.Digest() || info.Client != key || info.Session != "" || !info.ExpiresAt.After(now)
	})
	slices.SortFunc(infos, func(a, b sandbox.Info) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return infos, nil
}

// awaitRunner waits until the runner of info, which another replica may
// be starting, accepts connections: adopted before that, its first call
// would take it for dead and replace it under its creator. A record
// older than ReconcileGrace is not being made: it is used as it is (a
// dead runner is replaced on use). It returns ErrNotFound when the
// record is gone (its creation failed, or it was removed).
func (m *Fleet) awaitRunner(ctx context.Context, info sandbox.Info) error {
	for {
		if sb, err := m.provider.Get(ctx, info.ID); err == nil {
			if conn, err := sb.Dial(ctx); err == nil {
				conn.Close()
				return nil
			}
		}
		if time.Since(info.CreatedAt) > m.cfg.ReconcileGrace {
			return nil
		}
		if _, err := m.Record(ctx, info.ID); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// UsingNote tells the caller which default sandbox answered.
func UsingNote(b *Box) Note {
	return defaultNote(fmt.Sprintf("[using your default sandbox %s; pass sandbox_id to use another]", b.ID()), b, nil, false)
}

// foundNote is usingNote for a default this gateway did not track: one
// another replica (or a previous gateway) made, or replaced old.
func foundNote(old, b *Box) Note {
	if old != nil && old.ID() != b.ID() {
		return defaultNote(fmt.Sprintf("[your default sandbox %s is gone (idle, expired or destroyed); using your default sandbox %s; pass sandbox_id to use another]", old.ID(), b.ID()), b, old, false)
	}
	return UsingNote(b)
}

// createdNote tells the caller it got a new default sandbox, and why.
func createdNote(old, b *Box) Note {
	if old != nil {
		return defaultNote(fmt.Sprintf("[your default sandbox %s is gone (idle, expired or destroyed); created a new default sandbox %s, with an empty /workspace. Pass sandbox_id to use another]", old.ID(), b.ID()), b, old, true)
	}
	return defaultNote(fmt.Sprintf("[created your default sandbox %s: calls without sandbox_id from this client use it. Pass sandbox_id (from sandbox_create) to use another]", b.ID()), b, nil, true)
}

// defaultNote is the note of default sandbox b with its _meta member.
func defaultNote(text string, b, old *Box, created bool) Note {
	meta := map[string]any{"sandbox_id": b.ID()}
	if created {
		meta["created"] = true
	}
	if old != nil && old.ID() != b.ID() {
		meta["previous_sandbox_id"] = old.ID()
	}
	return Note{Text: text, Key: MetaDefaultSandbox, Meta: meta}
}
