package issuer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sandgate/sandgate/auth/jsonstate"
)

// jsonFile is one JSON document in the state directory, shared by the
// running server and the operator functions (AddClient, RotateKeys,
// AddUser); see package jsonstate.
type jsonFile[T any] = jsonstate.File[T]

func newJSONFile[T any](dir, name string) *jsonFile[T] {
	return jsonstate.New[T](filepath.Join(dir, name))
}

// ensureDir creates dir 0700, and narrows an existing one to 0700: it
// holds private keys and password hashes.
func ensureDir(dir string) error {
	if dir == "" {
		return errors.New("state directory is empty")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create state directory %s: %w", dir, err)
	}
	info, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("stat state directory %s: %w", dir, err)
	}
	if info.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("restrict state directory %s to 0700: %w", dir, err)
		}
	}
	return nil
}
