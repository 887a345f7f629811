package e2b

import (
	"context"
	"io/fs"
	"os"
	"time"

	"github.com/sandgate/sandgate/runner/protocol"
)

// Backend is the gateway's sandbox bookkeeping as this API needs it. The
// control-plane methods act for the principal the gateway authenticated,
// which travels in ctx; a sandbox the caller does not own is
// sandbox.ErrNotFound, exactly as if it did not exist.
type Backend interface {
	// Create starts a sandbox of the image req.Template names.
	Create(ctx context.Context, req CreateRequest) (Sandbox, error)
	// Get describes one of the caller's sandboxes.
	Get(ctx context.Context, id string) (Sandbox, error)
	// List describes all of the caller's sandboxes, oldest first.
	List(ctx context.Context) ([]Sandbox, error)
	// Kill destroys one of the caller's sandboxes, paused or not.
	Kill(ctx context.Context, id string) error
	// Pause pauses one of the caller's sandboxes: its files are kept,
	// and its memory as keepMemory says (nil: where the gateway can;
	// true: kept, or refused with ErrInvalid where it cannot; false:
	// not). A sandbox paused already is ErrPaused.
	Pause(ctx context.Context, id string, keepMemory *bool) error
	// Connect returns one of the caller's sandboxes running, resuming
	// it if it was paused (resumed says so) afresh on its files when
	// reboot is set (onResume 'reboot') and with its memory where it was
	// kept otherwise, and sets its timeout when timeout is not zero.
	Connect(ctx context.Context, id string, timeout time.Duration, reboot bool) (s Sandbox, resumed bool, err error)
	// SetTimeout makes the sandbox expire timeout from now (never later
	// than its maximum lifetime allows; the result says when).
	SetTimeout(ctx context.Context, id string, timeout time.Duration) (Sandbox, error)
	// SetNetwork replaces the sandbox's egress allowlist (within what the
	// operator allows the caller's tenant).
	SetNetwork(ctx context.Context, id string, allow []string) (Sandbox, error)
	// CreateSnapshot copies one of the caller's sandboxes' files into a
	// new snapshot named name ("" for a generated name).
	CreateSnapshot(ctx context.Context, id, name string) (Snapshot, error)
	// ListSnapshots lists the caller's tenant's snapshots, oldest first,
	// of sandbox sandboxID and named name when those are set.
	ListSnapshots(ctx context.Context, sandboxID, name string) ([]Snapshot, error)
	// DeleteSnapshot deletes one of the caller's tenant's snapshots (by
	// id or name); any other is sandbox.ErrNoSnapshot.
	DeleteSnapshot(ctx context.Context, id string) error
	// Fork makes count sandboxes from one of the caller's, each with
	// its files as they are now and the timeout given (0: the default);
	// one that could not be made has its Err.
	Fork(ctx context.Context, id string, count int, timeout time.Duration) ([]Forked, error)
	// Metrics samples the sandbox's resource use now.
	Metrics(ctx context.Context, id string) (Metrics, error)

	// Open authorises a data-plane request for operation op (an Op's
	// Name) by the sandbox's access token (as Sandbox.AccessToken gave
	// it) and returns the sandbox's runner. A missing or wrong token and
	// an unknown sandbox are all sandbox.ErrNotFound; each refusal is
	// audited, as MCP's are.
	Open(ctx context.Context, id, accessToken, op string) (Runner, error)
}

// CreateRequest is what a client may choose about a new sandbox.
type CreateRequest struct {
	Template string        // a template alias or image; "" for the default
	Timeout  time.Duration // lifetime from now; 0 for the default
	Metadata map[string]string
	Allow    []string // egress allowlist; nil for the tenant's default
	// PauseOnTimeout pauses the sandbox when its timeout ends instead of
	// killing it; AutoResume lets data-plane traffic resume it once
	// paused (lifecycle {onTimeout: 'pause', autoResume}).
	PauseOnTimeout bool
	AutoResume     bool
	// KeepMemory is the pause's keepMemory: nil keeps the memory where
	// the gateway can, true keeps it or refuses the create, false keeps
	// the files only.
	KeepMemory *bool
}

// Sandbox describes one sandbox as the control plane reports it.
type Sandbox struct {
	ID        string
	Template  string // the alias it was created by, or its image
	Image     string
	Metadata  map[string]string
	StartedAt time.Time
	EndAt     time.Time // when it expires
	CPUCount  float64
	MemoryMB  int64
	DiskMB    int64
	Allow     []string // egress allowlist
	// Paused says it is paused; PauseOnTimeout and AutoResume are the
	// lifecycle it was created with.
	Paused         bool
	PauseOnTimeout bool
	AutoResume     bool
	// AccessToken authorises data-plane requests for this sandbox with
	// the scopes its holder was granted; only its owner ever sees it.
	AccessToken string
}

// Snapshot is a snapshot as the API reports it: its id, which
// Sandbox.create takes as a template, and its names (the one it was
// given).
type Snapshot struct {
	ID    string
	Names []string
}

// Forked is one sandbox of a fork, or why it could not be made.
type Forked struct {
	Sandbox Sandbox
	Err     error
}

// Runner runs operations in one sandbox for the data plane.
type Runner interface {
	// ID is the sandbox's id.
	ID() string
	// Do runs fn with the sandbox's runner connection as one API call,
	// audited like a tool call: a call that changes something is
	// recorded durably before fn runs, and every call's end after it
	// returns. A call the token's scopes do not cover is refused with an
	// error wrapping ErrForbidden before anything runs. fn may stream
	// for as long as the request lasts; the sandbox counts as busy
	// meanwhile.
	Do(ctx context.Context, op Op, fn func(ctx context.Context, c *protocol.Client) error) error
}

// HostReader is implemented by a Runner that can open a file of its
// sandbox on the gateway's own disk (see sandbox.HostFiles), so that a
// download is a copy from that file instead of reads through the runner.
// OpenRegular returns a regular file, opened as the sandbox user, and
// what stat said of it; when it fails, for whatever reason, the download
// goes through the runner, whose answer is the reference.
type HostReader interface {
	OpenRegular(path string) (*os.File, fs.FileInfo, error)
}

// Names of the data-plane operations served over plain HTTP; the envd
// services' are "process.<Method>" and "filesystem.<Method>".
const (
	opDownload = "files.download"
	opUpload   = "files.upload"
	opExecute  = "interpreter.execute"
	opRestart  = "interpreter.restart"
)

// Op names a data-plane call for the audit log and the scope check.
type Op struct {
	Name     string         // e.g. "process.Start", "files.upload"
	Scope    string         // auth.Scope* the call needs
	ReadOnly bool           // changes nothing in the sandbox
	Summary  map[string]any // what the audit record says about the call: paths, commands; never file contents
}
