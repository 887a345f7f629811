//go:build !linux

package workspace

import (
	"errors"
	"os"
)

// OpenAsUser needs Linux (openat2 and per-thread file system ids); the
// caller asks the runner instead.
func (m *Manager) OpenAsUser(id, name string) (*os.File, error) { return nil, errors.ErrUnsupported }
