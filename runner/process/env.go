package process

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sandgate/sandgate/runner/protocol"
)

// ErrNoExecutable is wrapped by the error of Run and Start when the
// program to run is not found in PATH (or at the path given). The error
// is also a *protocol.Error with CodeNotFound.
var ErrNoExecutable = errors.New("executable not found")

// noExecError carries both the protocol error the gateway sees and
// ErrNoExecutable for callers such as package code that say more.
type noExecError struct{ pe *protocol.Error }

func (e noExecError) Error() string        { return e.pe.Message }
func (e noExecError) Unwrap() error        { return e.pe }
func (e noExecError) Is(target error) bool { return target == ErrNoExecutable }

// environ merges extra over base (a later entry of a key wins) and sets
// the call's marker last, so that a request cannot forge or clear it.
func environ(base []string, extra map[string]string, id string) ([]string, error) {
	keys := make([]string, 0, len(extra))
	for k, v := range extra {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return nil, protocol.Errorf(protocol.CodeInvalid, "invalid environment variable %q: names must be non-empty without '=' or NUL, values without NUL", k)
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	env := make([]string, 0, len(base)+len(keys)+1)
	env = append(env, base...)
	for _, k := range keys {
		env = append(env, k+"="+extra[k])
	}
	env = append(env, markerVar+"="+id)
	// Keep the last entry of every key, in first-seen order.
	last := make(map[string]int, len(env))
	for i, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		last[k] = i
	}
	out := env[:0]
	for i, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if last[k] == i {
			out = append(out, kv)
		}
	}
	return out, nil
}

// lookPath finds name as exec would in the child: a name with a slash is a
// path (relative to dir), any other name is searched in the child's PATH.
func lookPath(name, dir string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if err := executable(p); err != nil {
			return "", execError(name, err)
		}
		return p, nil
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		p := filepath.Join(d, name)
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", noExecError{pe: protocol.Errorf(protocol.CodeNotFound, "%s: command not found in PATH (%s)", name, path)}
}

// executable reports why p cannot be executed by the runner's uid, which
// is the child's, or nil.
func executable(p string) error {
	fi, err := os.Stat(p)
	switch {
	case err != nil:
		return err
	case fi.IsDir():
		return unix.EISDIR
	}
	return unix.Access(p, unix.X_OK)
}

func execError(name string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return noExecError{pe: protocol.Errorf(protocol.CodeNotFound, "%s: no such file", name)}
	case errors.Is(err, unix.EISDIR):
		return protocol.Errorf(protocol.CodeIsDir, "%s is a directory", name)
	case errors.Is(err, fs.ErrPermission):
		return protocol.Errorf(protocol.CodePermission, "%s is not executable", name)
	}
	return protocol.Errorf(protocol.CodeInvalid, "%s: %v", name, err)
}
