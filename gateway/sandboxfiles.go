package gateway

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/sandgate/sandgate/sandbox"
)

// sandboxFiles keeps one small file per sandbox in a directory of the
// gateway's VAR: what changes after a sandbox was created, which its
// labels cannot hold (labels cannot change on a running container), for
// a restarted gateway to read back. A changed allowlist (netstate.go),
// an owner's deadline (deadline.go) and a pooled sandbox's claim
// (claims.go) are kept so. Replicated gateways
// keep both in the provider's record instead.
type sandboxFiles struct {
	dir  string
	ext  string // the files' extension, e.g. ".json"
	what string // what they hold, for log messages
	log  *slog.Logger
}

// path is id's file. Sandbox ids are hex chosen by this gateway or read
// from labels it wrote; Base keeps a damaged one inside the directory.
func (f sandboxFiles) path(id string) string {
	return filepath.Join(f.dir, filepath.Base(id)+f.ext)
}

// save replaces id's file with data, durably.
func (f sandboxFiles) save(id string, data []byte) error {
	return writeDurable(f.dir, f.path(id), data)
}

// load returns id's file, and whether there is one.
func (f sandboxFiles) load(id string) ([]byte, bool, error) {
	data, err := os.ReadFile(f.path(id))
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	return data, err == nil, err
}

// drop removes id's file once the sandbox is gone.
func (f sandboxFiles) drop(id string) {
	if err := os.Remove(f.path(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		f.log.Warn("remove a sandbox's "+f.what, "sandbox_id", id, "error", err)
	}
}

// dropStale removes the files of sandboxes not in live.
func (f sandboxFiles) dropStale(live []sandbox.Info) {
	names, err := filepath.Glob(filepath.Join(f.dir, "*"+f.ext))
	if err != nil {
		return
	}
	keep := map[string]bool{}
	for _, info := range live {
		keep[f.path(info.ID)] = true
	}
	for _, name := range names {
		if !keep[name] {
			_ = os.Remove(name)
		}
	}
}

// claimFiles keeps the claims of pooled sandboxes (claims.go).
func (m *sandboxes) claimFiles() sandboxFiles {
	return sandboxFiles{dir: m.cfg.ClaimDir(), ext: ".json", what: "pooled sandbox's claim record", log: m.log}
}

// allowFiles keeps allowlists changed with sandbox_network.
func (m *sandboxes) allowFiles() sandboxFiles {
	return sandboxFiles{dir: m.cfg.NetworkDir(), ext: ".json", what: "network allowlist", log: m.log}
}

// deadlineFiles keeps the deadlines E2B clients set.
func (m *sandboxes) deadlineFiles() sandboxFiles {
	return sandboxFiles{dir: m.cfg.DeadlineDir(), what: "deadline", log: m.log}
}
