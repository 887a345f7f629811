package sandbox

import (
	"context"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// Provider creates and finds sandboxes.
type Provider interface {
	// Create starts a sandbox from spec and returns once its runner
	// accepts connections. On error nothing is left behind.
	Create(ctx context.Context, spec Spec) (Sandbox, error)
	// Get returns the live sandbox with the given id, or ErrNotFound.
	Get(ctx context.Context, id string) (Sandbox, error)
	// List describes the sandboxes this provider manages that match filter.
	List(ctx context.Context, filter Filter) ([]Info, error)
	// Remove destroys the sandbox with the given id, its workspace
	// included, whether or not anything still holds a Sandbox for it.
	// Removing a missing sandbox returns ErrNotFound.
	Remove(ctx context.Context, id string) error
	// Recreate replaces the runner (container) of the existing sandbox
	// spec.ID with a new one that mounts the same workspace, for a sandbox
	// whose runner died or stopped answering. The old container, if any,
	// is removed first; the workspace and its files are kept when the
	// provider's workspaces are durable (Info.WorkspaceDurable). It
	// returns ErrNotFound when the sandbox was removed.
	Recreate(ctx context.Context, spec Spec) (Sandbox, error)
}

// Sandbox is one live sandbox.
type Sandbox interface {
	// ID returns the sandbox id (random, at least 128 bits).
	ID() string
	// Info describes the sandbox as created.
	Info() Info
	// Dial opens a new connection to the runner inside the sandbox.
	Dial(ctx context.Context) (net.Conn, error)
	// Destroy stops and removes the sandbox and everything it wrote.
	Destroy(ctx context.Context) error
}

// HostFiles is implemented by a Sandbox whose workspace is a file system
// on the gateway's own host (Docker with workspaces on disk), so that the
// gateway can read a file there itself instead of asking the runner.
type HostFiles interface {
	// OpenHostFile opens the file at path (absolute and clean, as the
	// sandbox names it) read-only, with the sandbox user's permissions.
	// It fails for any path the host cannot answer for exactly as the
	// sandbox would (outside the workspace, through a symlink, onto
	// another mount, a workspace not on this host's disk); the caller
	// then asks the runner, whose answer is the reference.
	OpenHostFile(path string) (*os.File, error)
}

// Spec says what to create.
type Spec struct {
	// ID is the sandbox id to use; empty means the provider makes one.
	ID     string
	Image  string
	Limits Limits
	// Owner is an opaque digest of the owning principal; it is stored as a
	// label, never interpreted by the provider.
	Owner string
	// Session is the MCP session id that owns the sandbox, if any.
	Session string
	// Client, when set, is an opaque key of the client whose default
	// sandbox this is (one per owner and client), stored so that any
	// gateway replica, or a restarted gateway, finds that default by
	// listing (Filter.Client); never interpreted by the provider.
	Client string
	// Tenant is the owner's tenant, kept so that quotas and the egress
	// ceiling still apply after a gateway restart.
	Tenant string
	// Network is the sandbox's egress allowlist as rule strings (empty:
	// no network), kept so that a restarted gateway or a replaced runner
	// applies the same policy. The provider stores it, never reads it.
	Network []string
	// ExpiresAt is when the sandbox must be gone at the latest (max
	// lifetime); stored as a label so a restarted gateway can enforce it.
	ExpiresAt time.Time
	// Pool, when set, marks a container made ahead of demand for the
	// warm pool of that name (its image). It has no owner yet; who claims
	// it is recorded by the gateway (labels cannot change on a running
	// container), or by a provider that is PoolClaims, in its records.
	Pool string
	// Template is the name its creator asked for its image by (an E2B
	// template alias), and Metadata the creator's key-value pairs: kept
	// so that a restarted gateway or another replica reports and filters
	// by them. The provider stores both, never reads them, and nothing
	// security-relevant may depend on them: the creator chose them. The
	// gateway bounds Metadata (a few dozen short pairs) before it gets here.
	Template string
	Metadata map[string]string
	// Lifecycle is what its creator asked to happen when its timeout
	// ends; stored, never read, by the provider.
	Lifecycle Lifecycle
	// Snapshot, when set, names the snapshot (Snapshotter) whose files
	// the new sandbox's workspace starts with, instead of none.
	Snapshot string
}

// Lifecycle is what an E2B creator asked for at its sandbox's timeout:
// PauseOnTimeout pauses it instead of destroying it, AutoResume lets
// data-plane traffic to it resume it when paused, and FilesOnly pauses it
// without its memory where it could be kept (keepMemory: false).
// Providers store it as its String and read it back with ParseLifecycle.
type Lifecycle struct {
	PauseOnTimeout bool
	AutoResume     bool
	FilesOnly      bool
}

// String is "" (destroyed at its timeout, the default) or "pause"
// followed by ",auto-resume" and ",files-only" as they apply.
func (l Lifecycle) String() string {
	if !l.PauseOnTimeout {
		return ""
	}
	s := "pause"
	if l.AutoResume {
		s += ",auto-resume"
	}
	if l.FilesOnly {
		s += ",files-only"
	}
	return s
}

// ParseLifecycle reads a Lifecycle's String; anything else is the
// default.
func ParseLifecycle(s string) Lifecycle {
	words := strings.Split(s, ",")
	if words[0] != "pause" {
		return Lifecycle{}
	}
	l := Lifecycle{PauseOnTimeout: true}
	for _, w := range words[1:] {
		switch w {
		case "auto-resume":
			l.AutoResume = true
		case "files-only":
			l.FilesOnly = true
		}
	}
	return l
}

// Limits bound what a sandbox may use. Zero values are replaced by
// DefaultLimits by Limits.WithDefaults.
type Limits struct {
	CPUs           float64       // CPU quota in cores
	MemoryBytes    int64         // memory, equal to memory+swap (no swap)
	Pids           int64         // max processes and threads
	WorkspaceBytes int64         // size of the writable /workspace (disk, not RAM, where the host allows)
	TmpBytes       int64         // size of /tmp
	NoFile         int64         // open files per process
	FileSizeBytes  int64         // largest file a process may write (default: the workspace size)
	CallTimeout    time.Duration // default and maximum per-call wall clock
	IdleTTL        time.Duration // a sandbox unused this long is removed
	MaxLifetime    time.Duration // a sandbox older than this is removed
}

// DefaultLimits are the limits used where configuration says nothing.
var DefaultLimits = Limits{
	CPUs:           1,
	MemoryBytes:    512 << 20,
	Pids:           256,
	WorkspaceBytes: 4 << 30, // sparse on disk: costs nothing until written
	TmpBytes:       256 << 20,
	NoFile:         1024,
	CallTimeout:    60 * time.Second,
	IdleTTL:        15 * time.Minute,
	MaxLifetime:    4 * time.Hour,
}

// RunnerGOMAXPROCS is the GOMAXPROCS a provider puts in the runner's
// environment, sizing its Go runtime to the CPU quota rounded up. Go's own reading
// of a cgroup quota never goes below 2, and at the default of one core a
// runner scheduling on two threads spent a tenth more CPU per short
// command on waking and handing goroutines between them. User processes
// never see it: they start with an environment of their own.
func (l Limits) RunnerGOMAXPROCS() string {
	return strconv.Itoa(max(1, int(math.Ceil(l.WithDefaults().CPUs))))
}

// WithDefaults returns l with every zero field taken from DefaultLimits.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits
	if l.CPUs == 0 {
		l.CPUs = d.CPUs
	}
	if l.MemoryBytes == 0 {
		l.MemoryBytes = d.MemoryBytes
	}
	if l.Pids == 0 {
		l.Pids = d.Pids
	}
	if l.WorkspaceBytes == 0 {
		l.WorkspaceBytes = d.WorkspaceBytes
	}
	if l.TmpBytes == 0 {
		l.TmpBytes = d.TmpBytes
	}
	if l.NoFile == 0 {
		l.NoFile = d.NoFile
	}
	if l.FileSizeBytes == 0 {
		// A file cannot outgrow the workspace anyway; a smaller cap would
		// turn a legitimate big file into EFBIG before the disk is full.
		l.FileSizeBytes = l.WorkspaceBytes
	}
	if l.CallTimeout == 0 {
		l.CallTimeout = d.CallTimeout
	}
	if l.IdleTTL == 0 {
		l.IdleTTL = d.IdleTTL
	}
	if l.MaxLifetime == 0 {
		l.MaxLifetime = d.MaxLifetime
	}
	return l
}

// Info describes a sandbox. It is rebuilt from provider state (labels), so
// a restarted gateway sees the same Info.
type Info struct {
	ID          string    `json:"sandbox_id"`
	ContainerID string    `json:"container_id"`
	Image       string    `json:"image"`
	Owner       string    `json:"owner"`
	Session     string    `json:"session,omitempty"`
	Client      string    `json:"client,omitempty"` // Spec.Client
	Tenant      string    `json:"tenant,omitempty"`
	Network     []string  `json:"network,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	ExpiresAt   time.Time `json:"expires_at"`
	State       string    `json:"state"`          // provider's word: "running", "exited", ...
	Pool        string    `json:"pool,omitempty"` // Spec.Pool
	// WorkspaceDurable reports whether /workspace is on disk and outlives
	// the container, so a replacement after a runner death keeps files.
	WorkspaceDurable bool `json:"workspace_durable"`
	// Template, Metadata and Lifecycle are the Spec's.
	Template  string            `json:"template,omitempty"`
	Metadata  map[string]string `json:"metadata,omitempty"`
	Lifecycle Lifecycle         `json:"lifecycle,omitzero"`
	// PausedAt is when a paused sandbox (State StatePaused) was paused;
	// zero for one that is not, or when the provider cannot tell. Beside
	// a running State it is a pause mark a pause cut short left (a
	// crash between the mark and the stop), which the gateway clears.
	PausedAt time.Time `json:"paused_at,omitzero"`
	// PausedFor is the reason a paused sandbox was paused with (Pauser);
	// "" when the provider recorded none.
	PausedFor string `json:"paused_for,omitempty"`
	// ResumedAt is when a resumed sandbox was last resumed (zero: never
	// paused, or the provider cannot tell): a resume starts a new run,
	// and the gateway counts its maximum lifetime from there.
	ResumedAt time.Time `json:"resumed_at,omitzero"`
	// MemoryKept is true for a paused sandbox whose memory was
	// checkpointed (MemoryPauser): Resume restores its processes. In the
	// Sandbox that Resume returns it says whether they were restored.
	MemoryKept bool `json:"memory_kept,omitempty"`
	// DiskBytes is what the sandbox's workspace takes on the host's disk
	// (allocated blocks, not its size): what a paused sandbox costs.
	// Zero when the provider does not measure it.
	DiskBytes int64 `json:"disk_bytes,omitempty"`
	// LastUsed is the last use Recorder.Touch recorded; zero when none
	// was, or when the provider is no Recorder. Network is then the list
	// last set with Recorder.SetNetwork.
	LastUsed time.Time `json:"last_used,omitzero"`
	// Deadline is the end its owner last set with Recorder.SetDeadline
	// (zero: none, the sandbox lives until ExpiresAt).
	Deadline time.Time `json:"deadline,omitzero"`
}

// Filter selects sandboxes in List. Empty fields match everything.
type Filter struct {
	// ID selects one sandbox, whatever its state.
	ID      string
	Owner   string
	Session string
	Client  string
	Tenant  string
	// RecordsOnly asks only for what the sandboxes' records say: State
	// may be empty. Enough to count sandboxes, and cheaper where records
	// and runners are kept apart (Kubernetes: Secrets without their pods).
	RecordsOnly bool
	// Since, with RecordsOnly, names a sandbox this provider just created,
	// recreated or claimed: the records may then be read as they were at
	// that write, or later. Every record written before
	// that write is there; one written since may not be. It saves waiting
	// for a cache to catch up with every write in the system before the
	// read (Kubernetes' watch cache: up to a tenth of a second).
	// AnyRecent asks for no more than a recent state, for a check that is
	// repeated after the write it guards.
	Since string
}

// AnyRecent is Filter.Since for records of any recent state: a cache may
// answer without waiting for the latest writes (Kubernetes: milliseconds
// behind).
const AnyRecent = "*"

// Matches reports whether info has every field f asks for.
func (f Filter) Matches(info Info) bool {
	return (f.ID == "" || info.ID == f.ID) && (f.Owner == "" || info.Owner == f.Owner) &&
		(f.Session == "" || info.Session == f.Session) && (f.Client == "" || info.Client == f.Client) &&
		(f.Tenant == "" || info.Tenant == f.Tenant)
}

// Pauser is implemented by providers that can pause a sandbox: end
// everything running in it and free its CPU and memory, keeping its id,
// its record (owner, expiry, template, metadata) and its workspace, and
// later resume it under the same id on the same workspace. Processes,
// /tmp and interpreter state do not survive a pause.
type Pauser interface {
	// Pause stops sandbox id's runner and everything else running in it.
	// List then reports it with State StatePaused, Get does not find it,
	// and Remove removes it as any other. Pausing a paused sandbox does
	// nothing; a missing one is ErrNotFound. A crash in the middle leaves
	// the sandbox running or paused, never neither. reason (the gateway's
	// word for why, at most MaxPauseReason bytes) is recorded with the
	// pause and listed as Info.PausedFor, so that whoever serves the
	// sandbox next (another replica, a restarted gateway) knows whether
	// its traffic may resume it.
	Pause(ctx context.Context, id, reason string) error
	// Resume starts paused sandbox id again and returns once its runner
	// accepts connections; a running sandbox is returned as it is. A
	// sandbox that is neither (its runner died) is ErrNotPaused:
	// Recreate replaces it.
	Resume(ctx context.Context, id string) (Sandbox, error)
}

// Snapshotter is implemented by providers that can copy a sandbox's
// workspace into an immutable snapshot while it runs (or is paused) and
// start new sandboxes from one (Spec.Snapshot). Snapshot ids are chosen
// by the caller, as sandbox ids are; who may use a snapshot is the
// gateway's to record.
type Snapshotter interface {
	// Snapshot copies sandbox id's workspace, consistent as of one
	// instant, into new snapshot snap and returns the bytes it takes on
	// disk. The sandbox's writers wait while it is taken; on failure
	// (a full disk) nothing of the snapshot is left and the sandbox
	// runs on.
	Snapshot(ctx context.Context, id, snap string) (int64, error)
	// DeleteSnapshot removes snapshot snap; a missing one is
	// ErrNoSnapshot.
	DeleteSnapshot(ctx context.Context, snap string) error
}

// MemoryPauser is implemented by providers that can also pause a sandbox
// with its memory (gVisor checkpoints every process of the sandbox):
// resumed, its processes, its interpreter's variables and its browser
// carry on where they were.
type MemoryPauser interface {
	Pauser
	// KeepsMemory reports whether this provider's sandboxes can be
	// paused with their memory; when not, why not and what can, in words
	// for the caller.
	KeepsMemory() (bool, string)
	// PauseKeepingMemory is Pause that checkpoints the sandbox first, so
	// that Resume restores it as it was (Info.MemoryKept). A checkpoint
	// that fails is ErrCannotKeepMemory and leaves the sandbox running.
	PauseKeepingMemory(ctx context.Context, id, reason string) error
	// DropMemory discards paused sandbox id's checkpoint: its next
	// Resume starts it afresh on its files. One without is left as it is.
	DropMemory(ctx context.Context, id string) error
}

// MemorySnapshotter is implemented by providers whose snapshots can hold
// a running sandbox's memory too (gVisor checkpoints): a sandbox made
// from such a snapshot (Spec.Snapshot) starts with the snapshot's
// processes, interpreter state and browser where they were, and says so
// (Info.MemoryKept).
type MemorySnapshotter interface {
	Snapshotter
	// SnapshotWithMemory is Snapshot with the sandbox's memory. The
	// sandbox stops for its checkpoint and the copy of its workspace, so
	// that both are of one instant, and is restored from the checkpoint
	// (its runner connections close; its processes do not notice).
	// Where the memory cannot be taken it is ErrCannotKeepMemory, and
	// the sandbox runs on untouched.
	SnapshotWithMemory(ctx context.Context, id, snap string) (int64, error)
}

// StatePaused is the Info.State of a paused sandbox (Pauser).
const StatePaused = "paused"

// MaxPauseReason bounds a pause reason (Pauser.Pause), which providers
// keep beside the sandbox; a longer one is cut.
const MaxPauseReason = 64

// PauseReason is reason as a provider keeps it: cut to MaxPauseReason
// bytes, and "" unless it is printable ASCII (it is read back from
// storage a sandbox may write to).
func PauseReason(reason string) string {
	reason = reason[:min(len(reason), MaxPauseReason)]
	for _, c := range []byte(reason) {
		if c < ' ' || c > '~' {
			return ""
		}
	}
	return reason
}

// PoolClaims is implemented by providers that keep the claims of warm
// pool sandboxes in their own shared records, where every gateway
// replica reads them (Kubernetes: the sandbox's Secret). A pooled
// sandbox (Spec.Pool) is made without an owner; a claim gives it the
// owner, session, client, tenant, allowlist, expiry and E2B fields of a
// Spec, as if it had been created with that Spec at the claim's time.
type PoolClaims interface {
	// Claim makes the unclaimed pooled sandbox id spec's and returns how
	// it now describes itself. Of concurrent claims of one sandbox
	// exactly one succeeds; the others, and a claim of a sandbox that
	// is claimed or not pooled, fail with ErrClaimed (ErrNotFound: gone).
	Claim(ctx context.Context, id string, spec Spec) (Info, error)
	// RemoveUnclaimed removes pooled sandbox id as Remove does, but only
	// while it is unclaimed: ErrClaimed when a claim came first, even
	// one that raced this call.
	RemoveUnclaimed(ctx context.Context, id string) error
}

// Recorder is implemented by providers whose sandbox records are shared
// by several gateway replicas and can change after creation. A replica
// writes what the others must know there, rather than in its own memory
// or files: when a sandbox was last used, so that no replica removes as
// idle a sandbox another one uses, and the egress allowlist last set, so
// that every replica applies the same one, and the end its owner set,
// so that every replica removes it then. List reports all three
// (Info.LastUsed, Info.Network, Info.Deadline).
type Recorder interface {
	// Touch records that sandbox id was used at at. Writes are not
	// ordered: of two concurrent touches either may stay.
	Touch(ctx context.Context, id string, at time.Time) error
	// SetNetwork replaces sandbox id's recorded egress allowlist; a
	// later Recreate writes its Spec.Network there again.
	SetNetwork(ctx context.Context, id string, rules []string) error
	// SetDeadline records at as the end sandbox id's owner set, earlier
	// than its ExpiresAt (zero: none); a later Recreate keeps it.
	SetDeadline(ctx context.Context, id string, at time.Time) error
}
