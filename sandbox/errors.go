package sandbox

import "errors"

// Error categories. Providers wrap them with detail; callers test with
// errors.Is.
var (
	// ErrNotFound: no such sandbox (or not visible to the caller).
	ErrNotFound = errors.New("sandbox not found")
	// ErrImageMissing: the sandbox image is not present; the wrapped
	// message says how to build it.
	ErrImageMissing = errors.New("sandbox image missing")
	// ErrUnavailable: the backend (e.g. the Docker engine) cannot be reached.
	ErrUnavailable = errors.New("sandbox backend unavailable")
	// ErrRunnerMissing: the runner binary to inject does not exist.
	ErrRunnerMissing = errors.New("runner binary missing")
	// ErrStartFailed: the sandbox was created but its runner never came up.
	ErrStartFailed = errors.New("sandbox did not start")
	// ErrNotPaused: Resume of a sandbox that was not paused and does
	// not run (its runner died; Recreate replaces it).
	ErrNotPaused = errors.New("sandbox is not paused")
	// ErrCannotPause: this provider, or this host, cannot pause the
	// sandbox without losing what pausing keeps (its workspace).
	ErrCannotPause = errors.New("sandbox cannot be paused here")
	// ErrCannotKeepMemory: a pause that was to keep the sandbox's memory
	// could not (the runtime cannot checkpoint, or the checkpoint
	// failed); the sandbox runs on.
	ErrCannotKeepMemory = errors.New("sandbox memory cannot be kept")
	// ErrNoSnapshot: no such snapshot (Snapshotter, Spec.Snapshot).
	ErrNoSnapshot = errors.New("no such snapshot")
	// ErrClaimed: a pooled sandbox was claimed already (PoolClaims), or
	// is not a pooled sandbox at all.
	ErrClaimed = errors.New("pooled sandbox claimed already")
)
