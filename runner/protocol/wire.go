package protocol

import "encoding/json"

// Version is the protocol version. Bump it on any incompatible change to
// the frames or to an operation's parameters or results.
const Version = 1

// VersionHeader carries Version in the websocket upgrade request and in the
// runner's upgrade response.
const VersionHeader = "Sandgate-Protocol"

// Path is the HTTP path the runner serves the websocket on.
const Path = "/v1/connect"

// Request is one call from the gateway to the runner.
type Request struct {
	ID     uint64          `json:"id"`
	Op     Op              `json:"op"`
	Params json.RawMessage `json:"params,omitempty"`
	// Payload is bytes sent beside Params (see payload.go); nil for none.
	Payload []byte `json:"-"`
}

// EventType names the kind of an Event.
type EventType string

// Event types. Every request receives exactly one EventEnd, last.
const (
	EventStdout EventType = "stdout" // Data holds the next stdout chunk
	EventStderr EventType = "stderr" // Data holds the next stderr chunk
	EventEnd    EventType = "end"    // terminal: Result or Error is set
)

// Event is one frame from the runner about request ID.
type Event struct {
	ID     uint64          `json:"id"`
	Type   EventType       `json:"type"`
	Data   []byte          `json:"data,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *Error          `json:"error,omitempty"`
	// Payload is bytes sent beside Result (see payload.go); nil for none.
	Payload []byte `json:"-"`
}

// Op names an operation.
type Op string

// Operations. The params and result types are named next to each op.
const (
	OpInfo Op = "info" // no params → Info

	OpFileRead   Op = "file.read"   // ReadRequest → ReadResult
	OpFileWrite  Op = "file.write"  // WriteRequest → WriteResult
	OpFileEdit   Op = "file.edit"   // EditRequest → EditResult
	OpFileList   Op = "file.list"   // ListRequest → ListResult
	OpFileStat   Op = "file.stat"   // PathRequest → FileInfo
	OpFileSearch Op = "file.search" // SearchRequest → SearchResult
	OpFileMkdir  Op = "file.mkdir"  // MkdirRequest → FileInfo
	OpFileMove   Op = "file.move"   // MoveRequest → FileInfo (of the destination)
	OpFileRemove Op = "file.remove" // RemoveRequest → RemoveResult

	OpCodeSearch Op = "code.search" // CodeSearchRequest → CodeSearchResult

	OpExec Op = "exec" // ExecRequest → stream of events, ends with ExecResult
	OpCode Op = "code" // CodeRequest → like OpExec

	OpProcessStart  Op = "process.start"  // ExecRequest → ProcessInfo
	OpProcessList   Op = "process.list"   // no params → ProcessList
	OpProcessOutput Op = "process.output" // ProcessOutputRequest → ProcessOutput
	OpProcessWrite  Op = "process.write"  // ProcessWriteRequest → ProcessInfo
	OpProcessSignal Op = "process.signal" // ProcessSignalRequest → ProcessInfo

	OpCancel Op = "cancel" // CancelRequest → empty result
)

// CancelRequest asks the runner to cancel request Target on the same
// connection. Cancelling an unknown or finished request is not an error.
type CancelRequest struct {
	Target uint64 `json:"target"`
}

// Info describes the runner and its sandbox.
type Info struct {
	Version        int    `json:"version"`
	Pid            int    `json:"pid"`
	UID            int    `json:"uid"`
	GID            int    `json:"gid"`
	Hostname       string `json:"hostname"`
	Workspace      string `json:"workspace"`
	CgroupVersion  int    `json:"cgroup_version"` // 0 when no cgroup is readable
	MemoryLimit    int64  `json:"memory_limit_bytes,omitempty"`
	MemoryUsage    int64  `json:"memory_usage_bytes,omitempty"`
	MemoryCache    int64  `json:"memory_cache_bytes,omitempty"` // of MemoryUsage, the page cache (tmpfs included)
	CPUUsageMs     int64  `json:"cpu_usage_ms,omitempty"`
	PidsCurrent    int64  `json:"pids_current,omitempty"`
	PidsLimit      int64  `json:"pids_limit,omitempty"`
	OOMKills       int64  `json:"oom_kills,omitempty"`
	ProcessesAlive int    `json:"processes_alive"` // background processes still running
	// The workspace file system as statfs sees it (0 when unreadable):
	// its size is the quota the file system enforces.
	WorkspaceSizeBytes int64 `json:"workspace_size_bytes,omitempty"`
	WorkspaceUsedBytes int64 `json:"workspace_used_bytes,omitempty"`
}
