package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sandgate/sandgate/gateway/egress/policy"
	"github.com/sandgate/sandgate/sandbox"
)

// Network allowlists changed with sandbox_network. A sandbox's labels
// hold the list it was created (or last replaced) with, and labels
// cannot change on a running container; a later change is kept here, one
// file per sandbox under Config.NetworkDir, so a restarted gateway
// applies the list the user last set, not an older (possibly wider) one.

// saveAllow records id's current allowlist durably before it applies.
func (m *sandboxes) saveAllow(id string, rules policy.Rules) error {
	data, err := json.Marshal(rules.Strings())
	if err != nil {
		return err
	}
	if err := writeDurable(m.cfg.NetworkDir(), m.allowPath(id), data); err != nil {
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
	data, err := os.ReadFile(m.allowPath(id))
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	var list []string
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, false, fmt.Errorf("%s: %w", m.allowPath(id), err)
	}
	return list, true, nil
}

// dropAllow forgets id's allowlist once the sandbox is gone.
func (m *sandboxes) dropAllow(id string) {
	if err := os.Remove(m.allowPath(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		m.log.Warn("remove a sandbox's network allowlist", "sandbox_id", id, "error", err)
	}
}

// dropStaleAllows removes the files of sandboxes that no longer exist.
func (m *sandboxes) dropStaleAllows(live []sandbox.Info) {
	names, err := filepath.Glob(filepath.Join(m.cfg.NetworkDir(), "*.json"))
	if err != nil {
		return
	}
	keep := map[string]bool{}
	for _, info := range live {
		keep[m.allowPath(info.ID)] = true
	}
	for _, name := range names {
		if !keep[name] {
			_ = os.Remove(name)
		}
	}
}

// allowPath is id's file. Sandbox ids are hex chosen by this gateway or
// read from labels this gateway wrote; Base keeps a damaged one inside
// the directory.
func (m *sandboxes) allowPath(id string) string {
	return filepath.Join(m.cfg.NetworkDir(), filepath.Base(id)+".json")
}
