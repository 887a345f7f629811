package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/docker/docker/api/types/system"
	"github.com/docker/docker/client"
	"golang.org/x/sys/unix"
)

// instanceLock is a live gateway's claim on its instance of one engine.
//
// Reconciliation removes containers of the instance that the gateway does
// not know; were two gateways on one instance, each would remove the
// other's sandboxes. So a gateway holds an exclusive flock on a file named
// for the engine and the instance for as long as it runs. The kernel drops
// the lock when the process dies however it dies, so liveness needs no
// heartbeat and no grace period, and a gateway that was SIGKILLed never
// blocks the next one. The file lives on the host that runs the engine:
// sandboxes are bind mounts of host paths, so every gateway of an engine
// already shares its file system (a gateway in a container mounts the
// lock dir, see deploy/compose.yaml).
type instanceLock struct {
	f *os.File
}

// holderRecord is written into the lock file by its holder so that a
// refused gateway can say who holds the instance.
type holderRecord struct {
	PID    int       `json:"pid"`
	Host   string    `json:"host"`
	Holder string    `json:"holder,omitempty"`
	Since  time.Time `json:"since"`
}

// lockPoll is how often a waiting gateway retries the lock.
const lockPoll = 100 * time.Millisecond

// DefaultLockDir is where instance locks live: /run/sandgate for root (a
// tmpfs, so nothing outlives a reboot), else a per-user runtime dir.
func DefaultLockDir() string {
	if os.Geteuid() == 0 {
		return "/run/sandgate"
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "sandgate")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("sandgate-%d", os.Geteuid()))
}

// unsafeChars are replaced in the engine id before it names a file.
var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// lockInstance takes cfg.Instance's lock on the engine cli talks to
// (info is its answer to Info), waiting up to cfg.LockWait for a holder
// that is shutting down.
func lockInstance(ctx context.Context, cli *client.Client, info system.Info, cfg Config, log *slog.Logger) (*instanceLock, error) {
	engine := unsafeChars.ReplaceAllString(info.ID, "_")
	if engine == "" {
		engine = unsafeChars.ReplaceAllString(cli.DaemonHost(), "_")
	}
	if err := os.MkdirAll(cfg.LockDir, 0o700); err != nil {
		return nil, fmt.Errorf("create lock dir %s: %w", cfg.LockDir, err)
	}
	path := filepath.Join(cfg.LockDir, engine+"."+cfg.Instance+".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open instance lock %s: %w", path, err)
	}
	deadline := time.Now().Add(cfg.LockWait)
	for waited := false; ; waited = true {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock instance %s: %w", path, err)
		}
		holder := describeHolder(f)
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("instance %q on the Docker engine %s is held by another live gateway (%s), whose sandboxes this one would remove as orphans: stop that gateway, or start this one with another --instance (SANDGATE_INSTANCE)",
				cfg.Instance, cli.DaemonHost(), holder)
		}
		if !waited {
			log.Warn("instance held by another gateway; waiting for it to exit", "holder", holder, "wait", cfg.LockWait.String())
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("wait for instance %q: %w", cfg.Instance, ctx.Err())
		case <-time.After(lockPoll):
		}
	}
	host, _ := os.Hostname()
	rec, _ := json.Marshal(holderRecord{PID: os.Getpid(), Host: host, Holder: cfg.Holder, Since: time.Now().UTC()})
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt(append(rec, '\n'), 0)
	}
	return &instanceLock{f: f}, nil
}

// describeHolder reads the holder's record for a message.
func describeHolder(f *os.File) string {
	buf := make([]byte, 4096)
	n, _ := f.ReadAt(buf, 0)
	var rec holderRecord
	if json.Unmarshal(buf[:n], &rec) != nil || rec.PID == 0 {
		return "holder unknown"
	}
	s := fmt.Sprintf("pid %d on %s since %s", rec.PID, rec.Host, rec.Since.Format(time.RFC3339))
	if rec.Holder != "" {
		s += ", " + rec.Holder
	}
	return s
}

// release gives the instance up. The file stays: removing it would let a
// gateway that opened it before the removal and one that creates it anew
// both hold "the" lock.
func (l *instanceLock) release() {
	if l == nil || l.f == nil {
		return
	}
	_ = unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
	l.f.Close()
	l.f = nil
}
