package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/sandgate/sandgate/auth/identity"
	"github.com/sandgate/sandgate/gateway/egress/policy"
)

// Network allowlists changed with sandbox_network. A sandbox's labels
// hold the list it was created (or last replaced) with, and labels
// cannot change on a running container; a later change is kept here, one
// file per sandbox under Config.NetworkDir, so a restarted gateway
// applies the list the user last set, not an older (possibly wider) one.
// Replicated gateways keep it in the provider's record instead
// (Recorder.SetNetwork), where every replica reads it.

// CheckAllow parses a requested allowlist and checks it against the
// tenant's ceiling; the error says what is allowed.
func (m *Fleet) CheckAllow(tenant string, asked []string) (policy.Rules, error) {
	rules, err := policy.ParseRules(asked)
	if err != nil {
		return nil, fmt.Errorf("network.allow: %w", err)
	}
	if err := rules.Within(m.cfg.EgressPolicy.For(tenant).Ceiling); err != nil {
		return nil, fmt.Errorf("network.allow asks for more than the operator allows your tenant: %w", err)
	}
	return rules, nil
}

// SetAllow makes rules b's allowlist, recorded first (records.setAllow).
// The warning says when other gateway replicas apply it late.
func (m *Fleet) SetAllow(ctx context.Context, b *Box, rules policy.Rules) (warning string, err error) {
	return m.records.setAllow(ctx, b, rules)
}

// RefreshNetwork brings b's allowlist up to date from its record, which
// another replica may have changed. It fails when the record cannot be
// read; the box is forgotten when the record is gone. A single
// gateway's allowlists change only through it: nothing to do.
func (m *Fleet) RefreshNetwork(ctx context.Context, b *Box) error {
	return m.records.refresh(ctx, b)
}

// RefreshDeadline brings b's deadline up to date from its record, where
// another replica may have changed it since this one's last
// reconciliation (a minute at most). A record that cannot be read
// leaves b as it is.
func (m *Fleet) RefreshDeadline(ctx context.Context, b *Box) { m.records.refreshDeadline(ctx, b) }

// Sessionless lists p's sessionless sandboxes, with those other replicas
// made.
func (m *Fleet) Sessionless(ctx context.Context, p identity.Identity) ([]*Box, error) {
	return m.records.owned(ctx, p)
}

// syncNetwork applies list, read from a record at listedAt or later, to
// b unless this gateway changed b's list since listedAt (the list may
// predate that change).
func (m *Fleet) syncNetwork(b *Box, list []string, listedAt time.Time) {
	b.netMu.Lock()
	defer b.netMu.Unlock()
	if b.netWritten.After(listedAt) {
		return
	}
	m.applyNetwork(b, list)
}

// applyNetwork sets b's allowlist to list if it differs; b.netMu is held.
func (m *Fleet) applyNetwork(b *Box, list []string) {
	if slices.Equal(b.Gate.Allow().Strings(), list) || len(list) == 0 && len(b.Gate.Allow()) == 0 {
		return
	}
	b.Gate.SetAllow(m.parseAllow(b.ID(), list))
	m.log.Info("sandbox's network allowlist changed by another replica", "sandbox_id", b.ID(), "allow", list)
}

// saveAllow records id's current allowlist durably before it applies.
func (m *Fleet) saveAllow(id string, rules policy.Rules) error {
	data, err := json.Marshal(rules.Strings())
	if err != nil {
		return err
	}
	if err := m.allowFiles().save(id, data); err != nil {
		return fmt.Errorf("keep the network allowlist: %w", err)
	}
	return nil
}

// writeDurable replaces path (in dir, made if missing) with data, whole
// or not at all, and returns once the new content is on disk.
func writeDurable(dir, path string, data []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err = tmp.Write(data); err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err == nil {
		err = syncDir(dir)
	}
	return err
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// loadAllow returns the allowlist last set for id, if one was.
func (m *Fleet) loadAllow(id string) ([]string, bool, error) {
	data, ok, err := m.allowFiles().load(id)
	if !ok {
		return nil, false, err
	}
	var list []string
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, false, fmt.Errorf("%s: %w", m.allowFiles().path(id), err)
	}
	return list, true, nil
}
