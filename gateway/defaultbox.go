package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
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
// The map lives in this gateway's memory: on replicated gateways each
// replica keeps its own default per pair (see the README).

// defaultKey is the key of p's default sandbox for the client of req.
func defaultKey(p Principal, req mcp.CallToolRequest) string {
	var name string
	if req.Params.Meta != nil {
		if info := req.Params.Meta.ClientInfo(); info != nil {
			name = info.Name
		}
	}
	sum := sha256.Sum256([]byte(p.Digest() + "\x00" + p.ClientID + "\x00" + name))
	return hex.EncodeToString(sum[:16])
}

// defaultBox returns the live default sandbox of key, or nil.
func (m *sandboxes) defaultBox(p Principal, key string) *box {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.byClient[key]
	if b == nil || b.isGone() || m.byID[b.id()] != b || b.owner != p.Digest() {
		return nil
	}
	return b
}

// forClient returns p's default sandbox for key, creating it when there
// is none (or it is gone), and the note that tells the caller which one
// it got. Concurrent first calls of one client wait for one creation.
func (m *sandboxes) forClient(ctx context.Context, p Principal, key string) (*box, string, error) {
	wait := "default/" + key // m.creating is shared with sessions; their ids are UUIDs
	for {
		if b := m.defaultBox(p, key); b != nil {
			return b, fmt.Sprintf("[using your default sandbox %s; pass sandbox_id to use another]\n", b.id()), nil
		}
		m.mu.Lock()
		old := m.byClient[key]
		done, busy := m.creating[wait]
		if !busy {
			done = make(chan struct{})
			m.creating[wait] = done
			m.mu.Unlock()
			b, err := m.create(ctx, p, "", m.cfg.Image, m.defaultAllow(p.Tenant))
			m.mu.Lock()
			delete(m.creating, wait)
			if err == nil {
				m.byClient[key] = b
			}
			m.mu.Unlock()
			close(done)
			if err != nil {
				return nil, "", err
			}
			return b, createdNote(old, b), nil
		}
		m.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return nil, "", ctx.Err()
		}
	}
}

// createdNote tells the caller it got a new default sandbox, and why.
func createdNote(old, b *box) string {
	if old != nil {
		return fmt.Sprintf("[your default sandbox %s is gone (idle, expired or destroyed); created a new default sandbox %s, with an empty /workspace. Pass sandbox_id to use another]\n", old.id(), b.id())
	}
	return fmt.Sprintf("[created your default sandbox %s: calls without sandbox_id from this client use it. Pass sandbox_id (from sandbox_create) to use another]\n", b.id())
}
