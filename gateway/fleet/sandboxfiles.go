package fleet

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

// reserve creates id's file empty, durably, so that fill can later write
// it with one write and one flush: no file to create and no directory
// to flush then, when a caller waits.
func (f sandboxFiles) reserve(id string) error {
	if err := os.MkdirAll(f.dir, 0o700); err != nil {
		return err
	}
	file, err := os.OpenFile(f.path(id), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if err := file.Close(); err != nil {
		return err
	}
	return syncDir(f.dir)
}

// fill writes data, durably, into id's file that reserve made and that
// is still empty; without such a file it saves data as save does. A
// crash during the write leaves the file empty or holding a prefix of
// data, which load's caller cannot take for a whole one.
func (f sandboxFiles) fill(id string, data []byte) error {
	file, err := os.OpenFile(f.path(id), os.O_WRONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return f.save(id, data)
	}
	if err != nil {
		return err
	}
	if fi, err := file.Stat(); err != nil || fi.Size() != 0 {
		file.Close()
		return f.save(id, data) // written before: replaced whole
	}
	_, err = file.Write(data)
	if err == nil {
		err = file.Sync()
	}
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	return err
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
func (m *Fleet) claimFiles() sandboxFiles {
	return sandboxFiles{dir: m.cfg.ClaimDir(), ext: ".json", what: "pooled sandbox's claim record", log: m.log}
}

// allowFiles keeps allowlists changed with sandbox_network.
func (m *Fleet) allowFiles() sandboxFiles {
	return sandboxFiles{dir: m.cfg.NetworkDir(), ext: ".json", what: "network allowlist", log: m.log}
}

// deadlineFiles keeps the deadlines E2B clients set.
func (m *Fleet) deadlineFiles() sandboxFiles {
	return sandboxFiles{dir: m.cfg.DeadlineDir(), what: "deadline", log: m.log}
}
