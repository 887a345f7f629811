package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// runInstall implements `runner install DEST`: it copies this executable
// to DEST. On Kubernetes an init container runs it from the runner image
// to put the runner into a volume the sandbox's own image, which knows
// nothing of Sandgate, then runs it from.
func runInstall(args []string) error {
	if len(args) != 1 || args[0] == "" {
		return errors.New("usage: runner install DEST")
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the runner's own executable: %w", err)
	}
	return install(self, args[0])
}

// install copies the file src to dest, creating dest's directory. dest
// appears whole or not at all: the copy is written to a temporary file
// beside it, synced, made read-only and executable (0555), and renamed
// over dest, so a container that starts from a half-copied runner, or a
// crash that leaves one, cannot happen. A dest that is a directory is an
// error, not a place to copy into.
func install(src, dest string) (retErr error) {
	if fi, err := os.Stat(dest); err == nil && fi.IsDir() {
		return fmt.Errorf("install to %s: is a directory; give the file's path, e.g. %s", dest, filepath.Join(dest, "runner"))
	}
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("open the runner to copy: %w", err)
	}
	defer in.Close()
	dir := filepath.Dir(dest)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(dest)+".*")
	if err != nil {
		return fmt.Errorf("create a temporary file in %s: %w", dir, err)
	}
	defer func() {
		if retErr != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := io.Copy(tmp, in); err != nil {
		return fmt.Errorf("copy %s to %s: %w", src, tmp.Name(), err)
	}
	if err := tmp.Chmod(0o555); err != nil {
		return fmt.Errorf("chmod %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), dest); err != nil {
		return fmt.Errorf("install %s: %w", dest, err)
	}
	return syncDir(dir)
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open %s to sync it: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
