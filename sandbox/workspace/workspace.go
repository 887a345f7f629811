package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"

	"github.com/sandgate/sandgate/sandbox"
)

// Backend names how workspaces are stored.
type Backend string

// Backends. Auto, the default, picks Loop when the host supports it and
// Tmpfs otherwise.
const (
	Auto  Backend = "auto"
	Loop  Backend = "loop"  // sparse ext4 image on disk, loop-mounted
	Tmpfs Backend = "tmpfs" // size-capped tmpfs inside the container; the host keeps nothing
)

// ParseBackend checks a backend name from configuration.
func ParseBackend(s string) (Backend, error) {
	switch b := Backend(s); b {
	case "":
		return Auto, nil
	case Auto, Loop, Tmpfs:
		return b, nil
	}
	return "", fmt.Errorf("workspace backend %q: want auto, loop or tmpfs", s)
}

// File names inside a workspace directory.
const (
	imageName = "disk.ext4"
	mountName = "mnt"
)

// idPattern bounds sandbox ids: each becomes one path component.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// Options configure a Manager.
type Options struct {
	// Root is the absolute host directory holding every workspace. Open
	// creates it 0700; an existing one must be a directory.
	Root string
	// Backend is the requested backend; Auto falls back to Tmpfs.
	Backend Backend
	// UID and GID own the root of every new workspace file system: the
	// sandbox user.
	UID, GID int
	Logger   *slog.Logger
}

// Manager creates and removes workspaces. It is safe for concurrent use.
type Manager struct {
	opts    Options
	backend Backend
	reason  string // why Auto fell back to Tmpfs
	locks   sync.Map
	// root is Root, open for as long as the Manager lives (with Loop),
	// so that OpenAsUser resolves two names below it per file, not the
	// whole path from /.
	root *os.File
}

// Open checks what the host supports and returns a Manager. With Backend
// Loop it fails when loop mounts do not work; with Auto it falls back to
// Tmpfs and Reason says why.
func Open(ctx context.Context, opts Options) (*Manager, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Backend == "" {
		opts.Backend = Auto
	}
	m := &Manager{opts: opts, backend: opts.Backend}
	if opts.Backend == Tmpfs {
		m.reason = "configured"
		return m, nil
	}
	if !filepath.IsAbs(opts.Root) {
		return nil, fmt.Errorf("workspace root %q must be an absolute path", opts.Root)
	}
	if err := sandbox.MakePrivateDir(opts.Root, "workspace root"); err != nil {
		return nil, err
	}
	err := probe(ctx, opts.Root)
	switch {
	case err == nil:
		m.backend = Loop
		if m.root, err = os.Open(opts.Root); err != nil {
			return nil, fmt.Errorf("workspace root: %w", err)
		}
	case opts.Backend == Loop:
		return nil, fmt.Errorf("workspace backend loop: %w", err)
	default:
		m.backend, m.reason = Tmpfs, err.Error()
	}
	return m, nil
}

// Backend reports the backend in use: Loop or Tmpfs, never Auto.
func (m *Manager) Backend() Backend { return m.backend }

// Reason says why the Manager uses Tmpfs ("" with Loop).
func (m *Manager) Reason() string { return m.reason }

// Durable reports whether workspaces outlive their container (Loop).
func (m *Manager) Durable() bool { return m.backend == Loop }

// Dir is the host directory of sandbox id's workspace.
func (m *Manager) Dir(id string) string { return filepath.Join(m.opts.Root, id) }

// MountPath is the host path to bind-mount at /workspace.
func (m *Manager) MountPath(id string) string { return filepath.Join(m.Dir(id), mountName) }

// lock serialises Create and Remove of one id.
func (m *Manager) lock(id string) func() {
	v, _ := m.locks.LoadOrStore(id, &sync.Mutex{})
	mu := v.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// Create makes and mounts a workspace of size bytes for sandbox id and
// returns its mount path. It fails if the workspace exists, so one
// sandbox never adopts another's files. On error nothing is left.
func (m *Manager) Create(ctx context.Context, id string, size int64) (string, error) {
	return m.create(id, func(img string) error { return makeImage(ctx, img, size, m.opts.UID, m.opts.GID) })
}

// create makes sandbox id's workspace directory, has fill make its image
// (empty, or a snapshot's copy) and mounts it; on error nothing is left.
func (m *Manager) create(id string, fill func(img string) error) (_ string, retErr error) {
	if m.backend != Loop {
		return "", errors.New("create workspace: the tmpfs backend keeps nothing on the host")
	}
	if !idPattern.MatchString(id) {
		return "", fmt.Errorf("create workspace: id %q must match %s", id, idPattern)
	}
	defer m.lock(id)()
	dir := m.Dir(id)
	if err := os.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("create workspace %s: already exists", id)
		}
		return "", fmt.Errorf("create workspace %s: %w", id, err)
	}
	defer func() {
		if retErr != nil {
			m.removeLocked(id)
		}
	}()
	img, mnt := filepath.Join(dir, imageName), filepath.Join(dir, mountName)
	if err := os.Mkdir(mnt, 0o755); err != nil {
		return "", fmt.Errorf("create workspace %s: %w", id, err)
	}
	if err := fill(img); err != nil {
		return "", fmt.Errorf("create workspace %s: %w", id, err)
	}
	if err := mountImage(img, mnt); err != nil {
		return "", fmt.Errorf("create workspace %s: %w", id, err)
	}
	return mnt, nil
}

// Ready reports whether sandbox id's workspace exists and is mounted, so
// that a replacement container may bind it. A workspace whose mount is
// gone (the host rebooted) is mounted again from its image.
func (m *Manager) Ready(id string) (string, error) {
	if m.backend != Loop || !idPattern.MatchString(id) {
		return "", fs.ErrNotExist
	}
	defer m.lock(id)()
	dir := m.Dir(id)
	img, mnt := filepath.Join(dir, imageName), filepath.Join(dir, mountName)
	if _, err := os.Lstat(img); err != nil {
		return "", err
	}
	mounted, err := isMountPoint(mnt)
	if err != nil {
		return "", err
	}
	if !mounted {
		if err := mountImage(img, mnt); err != nil {
			return "", fmt.Errorf("remount workspace %s: %w", id, err)
		}
	}
	return mnt, nil
}

// Remove unmounts and deletes sandbox id's workspace. A missing one is
// not an error. The container using it must be gone first.
func (m *Manager) Remove(id string) error {
	if m.backend != Loop || !idPattern.MatchString(id) {
		return nil
	}
	defer m.lock(id)()
	return m.removeLocked(id)
}

// removeLocked unmounts the workspace, then deletes the image, the mount
// point and the directory. The sandbox's files are only ever inside the
// image, so nothing walks them; os.RemoveAll of the leftovers does not
// follow symlinks.
func (m *Manager) removeLocked(id string) error {
	dir := m.Dir(id)
	mnt := filepath.Join(dir, mountName)
	if mounted, err := isMountPoint(mnt); err == nil && mounted {
		if err := unmount(mnt); err != nil {
			return fmt.Errorf("remove workspace %s: %w", id, err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove workspace %s: %w", id, err)
	}
	return nil
}

// DiskBytes is what sandbox id's workspace takes on the host's disk: the
// blocks its image has allocated, not its size (images are sparse).
// Zero for none, or with Tmpfs.
func (m *Manager) DiskBytes(id string) int64 {
	if m.backend != Loop || !idPattern.MatchString(id) {
		return 0
	}
	fi, err := os.Lstat(filepath.Join(m.Dir(id), imageName))
	if err != nil {
		return 0
	}
	return allocated(fi)
}

// List returns the ids of every workspace on the host, sorted.
func (m *Manager) List() ([]string, error) {
	if m.backend != Loop {
		return nil, nil
	}
	ents, err := os.ReadDir(m.opts.Root)
	if err != nil {
		return nil, fmt.Errorf("list workspaces: %w", err)
	}
	var ids []string
	for _, e := range ents {
		if e.IsDir() && idPattern.MatchString(e.Name()) {
			ids = append(ids, e.Name())
		}
	}
	slices.Sort(ids)
	return ids, nil
}
