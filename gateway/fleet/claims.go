package fleet

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/sandgate/sandgate/sandbox"
)

// Claim records. A warm pool's container is made before anyone owns it,
// so its labels say only which pool it is for (sandbox.Spec.Pool), and
// labels cannot change on a running container. Who claimed it is written
// here, one file per sandbox under Config.ClaimDir, durably and before
// the sandbox is handed to its owner. The pool creates the file empty
// when it makes the sandbox, so that a claim, which a new session waits
// for, is one write and one flush (sandboxFiles.fill); an empty file, or
// one a crash left half written, is no claim. At start, reconciliation reads a
// pooled container's owner, session, client (of a default sandbox),
// tenant, allowlist and expiry from its claim record; a pooled container
// without one was never handed to anyone and is removed. So a crash at
// any point either leaves an unclaimed container (removed) or a claimed
// one with a complete record (adopted or removed like any sandbox with
// those labels), never a container with two owners or none that stays.

// claim is what a fresh sandbox's labels would have said.
type claim struct {
	Owner     string    `json:"owner"`
	Session   string    `json:"session,omitempty"`
	Client    string    `json:"client,omitempty"` // whose default sandbox it is (defaultbox.go)
	Tenant    string    `json:"tenant,omitempty"`
	Network   []string  `json:"network,omitempty"`
	ExpiresAt time.Time `json:"expires_at"`
	ClaimedAt time.Time `json:"claimed_at"`
	// Template, Metadata and Lifecycle are an E2B creator's (sandbox.Spec).
	Template  string            `json:"template,omitempty"`
	Metadata  map[string]string `json:"metadata,omitempty"`
	Lifecycle string            `json:"lifecycle,omitempty"` // sandbox.Lifecycle.String
}

// apply returns info as a sandbox created with the claim's spec would
// describe itself: created, for its owner, when it was claimed.
func (c claim) apply(info sandbox.Info) sandbox.Info {
	info.Owner, info.Session, info.Client, info.Tenant, info.Network, info.ExpiresAt = c.Owner, c.Session, c.Client, c.Tenant, c.Network, c.ExpiresAt
	info.Template, info.Metadata, info.Lifecycle = c.Template, c.Metadata, sandbox.ParseLifecycle(c.Lifecycle)
	if !c.ClaimedAt.IsZero() {
		info.CreatedAt = c.ClaimedAt
	}
	return info
}

func claimOf(spec sandbox.Spec, now time.Time) claim {
	return claim{Owner: spec.Owner, Session: spec.Session, Client: spec.Client, Tenant: spec.Tenant, Network: spec.Network, ExpiresAt: spec.ExpiresAt, ClaimedAt: now,
		Template: spec.Template, Metadata: spec.Metadata, Lifecycle: spec.Lifecycle.String()}
}

// saveClaim records c for sandbox id durably.
func (m *Fleet) saveClaim(id string, c claim) error {
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if err := m.claimFiles().fill(id, data); err != nil {
		return fmt.Errorf("record the claim of pooled sandbox %s: %w", id, err)
	}
	return nil
}

// loadClaim returns sandbox id's claim, if it has one.
func (m *Fleet) loadClaim(id string) (claim, bool, error) {
	var c claim
	data, ok, err := m.claimFiles().load(id)
	if (!ok || len(data) == 0) && err == nil {
		return c, false, nil // none, or reserved and never filled
	}
	if err == nil {
		err = json.Unmarshal(data, &c)
	}
	if err != nil {
		return c, false, fmt.Errorf("claim of pooled sandbox %s: %w", id, err)
	}
	return c, true, nil
}

// dropStaleClaims removes the records of pooled containers that no longer
// exist (or were replaced by a container with labels of their own).
func (m *Fleet) dropStaleClaims(live []sandbox.Info) {
	pooled := slices.DeleteFunc(slices.Clone(live), func(info sandbox.Info) bool { return info.Pool == "" })
	m.claimFiles().dropStale(pooled)
}

// claimed is a pooled sandbox as its owner sees it: the provider's handle
// with the claim's owner, session, tenant, allowlist and expiry.
type claimed struct {
	sandbox.Sandbox
	info sandbox.Info
}

func (c claimed) Info() sandbox.Info { return c.info }

// OpenHostFile lets the gateway read a claimed sandbox's files from the
// host as it would a fresh one's (sandbox.HostFiles).
func (c claimed) OpenHostFile(path string) (*os.File, error) {
	if hf, ok := c.Sandbox.(sandbox.HostFiles); ok {
		return hf.OpenHostFile(path)
	}
	return nil, errors.ErrUnsupported
}
