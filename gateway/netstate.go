package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/sandgate/sandgate/gateway/egress/policy"
)

// Network allowlists changed with sandbox_network. A sandbox's labels
// hold the list it was created (or last replaced) with, and labels
// cannot change on a running container; a later change is kept here, one
// file per sandbox under Config.NetworkDir, so a restarted gateway
// applies the list the user last set, not an older (possibly wider) one.
// Replicated gateways keep it in the provider's record instead
// (Recorder.SetNetwork), where every replica reads it.

// setAllow makes rules b's allowlist, saved first: in the record for a
// replicated gateway, else in a file. A replicated gateway that narrowed
// the list then takes the runner's egress session over (takeEgress), so
// that no other replica decides a new connection with the old list once
// this returns; if it cannot, the others apply the new list at their
// next reconciliation, and warning says so.
func (m *sandboxes) setAllow(ctx context.Context, b *box, rules policy.Rules) (warning string, err error) {
	if !m.replicated() {
		return "", b.gate.Update(rules, func(r policy.Rules) error { return m.saveAllow(b.id(), r) })
	}
	b.netMu.Lock()
	old := b.gate.Allow()
	err = b.gate.Update(rules, func(r policy.Rules) error {
		if err := m.rec.SetNetwork(ctx, b.id(), r.Strings()); err != nil {
			return fmt.Errorf("keep the network allowlist: %w", err)
		}
		return nil
	})
	b.netWritten = time.Now() // even on error: the write may have landed
	b.netMu.Unlock()
	if err != nil || old.Within(rules) == nil {
		return "", err // a wider list: a replica that still applies the old one is stricter
	}
	if err := b.takeEgress(ctx); err != nil {
		m.log.Warn("take over a sandbox's egress session after narrowing its allowlist", "sandbox_id", b.id(), "error", err)
		return fmt.Sprintf("other gateway replicas apply it within %s (this one could not take over the sandbox's egress session: %v)", m.cfg.ReconcileInterval, err), nil
	}
	return "", nil
}

// refreshNetwork reads b's allowlist from its record and applies it. It
// fails when the record cannot be read; the box is forgotten when the
// record is gone.
func (m *sandboxes) refreshNetwork(ctx context.Context, b *box) error {
	b.netMu.Lock()
	defer b.netMu.Unlock()
	info, err := m.record(ctx, b.id())
	if isNotFound(err) {
		m.forget(b)
	}
	if err != nil {
		return err
	}
	m.applyNetwork(b, info.Network)
	return nil
}

// syncNetwork applies list, read from a record at listedAt or later, to
// b unless this gateway changed b's list since listedAt (the list may
// predate that change).
func (m *sandboxes) syncNetwork(b *box, list []string, listedAt time.Time) {
	b.netMu.Lock()
	defer b.netMu.Unlock()
	if b.netWritten.After(listedAt) {
		return
	}
	m.applyNetwork(b, list)
}

// applyNetwork sets b's allowlist to list if it differs; b.netMu is held.
func (m *sandboxes) applyNetwork(b *box, list []string) {
	if slices.Equal(b.gate.Allow().Strings(), list) || len(list) == 0 && len(b.gate.Allow()) == 0 {
		return
	}
	b.gate.SetAllow(m.parseAllow(b.id(), list))
	m.log.Info("sandbox's network allowlist changed by another replica", "sandbox_id", b.id(), "allow", list)
}

// saveAllow records id's current allowlist durably before it applies.
func (m *sandboxes) saveAllow(id string, rules policy.Rules) error {
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
func (m *sandboxes) loadAllow(id string) ([]string, bool, error) {
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
