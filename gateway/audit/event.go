package audit

import (
	"time"

	"github.com/sandgate/sandgate/auth/identity"
)

// Kind says what an Event records. The set is closed: Append refuses any
// other value, so every record in a log is one of these.
type Kind string

// Event kinds.
const (
	KindSessionStart   Kind = "session.start"   // an MCP session was opened
	KindSessionEnd     Kind = "session.end"     // a session ended (DELETE, idle TTL, lifetime, quota)
	KindSandboxCreate  Kind = "sandbox.create"  // a container was created for a session or sandbox_create
	KindSandboxDestroy Kind = "sandbox.destroy" // a container was removed
	KindSandboxReplace Kind = "sandbox.replace" // a dead or unresponsive sandbox got a new container (workspace kept where durable)
	KindSandboxPause   Kind = "sandbox.pause"   // a sandbox was paused: its processes ended, its workspace kept; Summary's reason says why
	KindSandboxResume  Kind = "sandbox.resume"  // a paused sandbox was started again; Summary's reason says why
	KindSnapshotCreate Kind = "snapshot.create" // a sandbox's workspace was copied into a snapshot; Summary names it
	KindSnapshotDelete Kind = "snapshot.delete" // a snapshot was deleted; Summary says why
	KindToolStart      Kind = "tool.start"      // a tool call passed the scope check and is about to run
	KindToolEnd        Kind = "tool.end"        // a tool call finished; Outcome says how
	KindToolDenied     Kind = "tool.denied"     // a tool call was refused; DenyReason says why
	KindEgress         Kind = "egress.connect"  // a sandbox's network connection, allowed (and ended) or refused; Connection says where
	KindIngress        Kind = "ingress.request" // a request (or upgraded connection) to a sandbox's preview port; Summary says who, port, status, bytes each way
)

// Valid reports whether k is one of the kinds declared in this package.
func (k Kind) Valid() bool {
	switch k {
	case KindSessionStart, KindSessionEnd, KindSandboxCreate, KindSandboxDestroy, KindSandboxReplace, KindSandboxPause, KindSandboxResume, KindSnapshotCreate, KindSnapshotDelete,
		KindToolStart, KindToolEnd, KindToolDenied, KindEgress, KindIngress:
		return true
	}
	return false
}

// Outcomes of a finished action, for Event.Outcome. An event that records
// the start of something has no outcome ("").
const (
	OutcomeOK       = "ok"
	OutcomeError    = "error"
	OutcomeDenied   = "denied"
	OutcomeTimeout  = "timeout"
	OutcomeOOM      = "oom"
	OutcomeCanceled = "canceled"
)

func validOutcome(o string) bool {
	switch o {
	case "", OutcomeOK, OutcomeError, OutcomeDenied, OutcomeTimeout, OutcomeOOM, OutcomeCanceled:
		return true
	}
	return false
}

// Event is one audit record. The JSON form of an Event is its line in the
// log; the field order below is the member order of that line and is part
// of the format (see the package comment). Hash must stay the last field.
type Event struct {
	// Set by the sink; whatever the caller puts here is overwritten.
	Seq      uint64    `json:"seq"`       // 1 for the first record of a log, then +1 per record
	ID       string    `json:"id"`        // random UUID (version 4)
	Time     time.Time `json:"time"`      // UTC, encoded as RFC 3339 with nanoseconds
	PrevHash string    `json:"prev_hash"` // Hash of the record before; "" for Seq 1

	// Set by the caller.
	Kind        Kind              `json:"kind"`
	Principal   identity.Identity `json:"principal"`
	Session     string            `json:"session,omitempty"`
	SandboxID   string            `json:"sandbox_id,omitempty"`
	ContainerID string            `json:"container_id,omitempty"`
	Tool        string            `json:"tool,omitempty"`
	RequestID   string            `json:"request_id,omitempty"`
	// ArgsDigest is Digest of the tool call's arguments; the arguments
	// themselves are never recorded.
	ArgsDigest string `json:"args_digest,omitempty"`
	// Summary is a redacted description of the call (path, command,
	// language). It must never hold environment values, file contents or
	// stdin. Append cuts each value to 200 characters as a backstop.
	// Like every string of a record, its keys and values are made valid
	// UTF-8 before the record is sealed (see prepare).
	Summary    map[string]string `json:"summary,omitempty"`
	Outcome    string            `json:"outcome,omitempty"` // one of the Outcome constants, or ""
	Error      string            `json:"error,omitempty"`   // cut to 1000 characters
	DenyReason string            `json:"deny_reason,omitempty"`

	ExitCode        *int  `json:"exit_code,omitempty"` // nil when no process exited
	DurationMs      int64 `json:"duration_ms,omitempty"`
	CPUMs           int64 `json:"cpu_ms,omitempty"`
	MemoryPeakBytes int64 `json:"memory_peak_bytes,omitempty"`
	OOMKilled       bool  `json:"oom_killed,omitempty"`
	TimedOut        bool  `json:"timed_out,omitempty"`

	// Connection describes a KindEgress record's connection.
	Connection *Connection `json:"connection,omitempty"`

	// Hash is "sha256:" and the hex SHA-256 of the record's canonical
	// encoding without this field. Set by the sink.
	Hash string `json:"hash,omitempty"`
}

// Connection is one network connection a sandbox made, or tried to make,
// through the gateway's egress proxy.
type Connection struct {
	Proxy     string `json:"proxy"`          // how the sandbox asked: connect, http or socks5
	Asked     string `json:"asked"`          // host:port as the sandbox sent it
	Host      string `json:"host,omitempty"` // the host as normalised for the policy
	Port      uint16 `json:"port"`
	SNI       string `json:"sni,omitempty"`  // TLS server name, when one was read (port 443)
	IP        string `json:"ip,omitempty"`   // the address dialled
	Rule      string `json:"rule,omitempty"` // the sandbox's allowlist entry that allowed it
	Status    int    `json:"status"`         // 200, or the refusal's HTTP status
	Closed    string `json:"closed,omitempty"`
	BytesUp   int64  `json:"bytes_up"`   // sandbox to destination
	BytesDown int64  `json:"bytes_down"` // destination to sandbox
	// Unrecorded counts connections refused over the sandbox's rate
	// limit, since its previous record, that have no record of their own.
	Unrecorded int64 `json:"unrecorded,omitempty"`
}
