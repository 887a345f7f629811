package protocol

import "time"

// DefaultOutputCap is the per-stream output cap for one call.
const DefaultOutputCap = 1 << 20

// ExecRequest runs a command: Command through "/bin/sh -c", or Argv
// directly (exactly one of the two). Cwd defaults to the workspace.
// Env adds to (and overrides) the runner's base environment.
type ExecRequest struct {
	Command   string            `json:"command,omitempty"`
	Argv      []string          `json:"argv,omitempty"`
	Cwd       string            `json:"cwd,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
	Stdin     []byte            `json:"stdin,omitempty"`
	TimeoutMs int64             `json:"timeout_ms,omitempty"` // 0: no timeout (background) or the runner default (exec)
	OutputCap int64             `json:"output_cap,omitempty"` // per stream; 0: DefaultOutputCap
	// Tag names a background process (process.start only) so that a
	// client can find it again by a name of its choosing; ProcessInfo
	// reports it. Tags need not be unique.
	Tag string `json:"tag,omitempty"`
}

// CodeRequest runs a snippet: written to a temp file and executed with the
// language's interpreter, otherwise exactly like ExecRequest.
type CodeRequest struct {
	Language  string            `json:"language"` // a Language or one of its aliases
	Code      string            `json:"code"`
	Cwd       string            `json:"cwd,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
	Stdin     []byte            `json:"stdin,omitempty"`
	TimeoutMs int64             `json:"timeout_ms,omitempty"`
	OutputCap int64             `json:"output_cap,omitempty"`
}

// ExecResult ends an exec or code request. Output itself travels in the
// stdout/stderr events; the flags say whether any was dropped.
type ExecResult struct {
	// Pid is the pid the call's root process had. No event carries it
	// while the process runs: no gateway needs it then, and for a short
	// command such an event would cost a frame, a write and a wake-up of
	// the gateway's connection reader.
	Pid             int    `json:"pid"`
	ExitCode        int    `json:"exit_code"`        // -1 when killed by a signal
	Signal          string `json:"signal,omitempty"` // e.g. "SIGKILL"
	DurationMs      int64  `json:"duration_ms"`
	CPUMs           int64  `json:"cpu_ms"`
	MemoryPeakBytes int64  `json:"memory_peak_bytes"`
	StdoutBytes     int64  `json:"stdout_bytes"` // produced, including dropped bytes
	StderrBytes     int64  `json:"stderr_bytes"`
	StdoutTruncated bool   `json:"stdout_truncated"`
	StderrTruncated bool   `json:"stderr_truncated"`
	TimedOut        bool   `json:"timed_out"`
	Canceled        bool   `json:"canceled"`
	OOMKilled       bool   `json:"oom_killed"`
	// Message explains an abnormal end in words a user can act on, e.g.
	// "killed: out of memory (limit 512 MiB)" or "timed out after 5s".
	Message string `json:"message,omitempty"`
}

// ProcessInfo describes a background process.
type ProcessInfo struct {
	ID        string     `json:"id"`
	Pid       int        `json:"pid"`
	Command   string     `json:"command"`
	Argv      []string   `json:"argv,omitempty"` // as started, when started with Argv
	Cwd       string     `json:"cwd,omitempty"`  // the working directory it started in
	Tag       string     `json:"tag,omitempty"`  // ExecRequest.Tag
	StartedAt time.Time  `json:"started_at"`
	Running   bool       `json:"running"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	ExitCode  *int       `json:"exit_code,omitempty"`
	Signal    string     `json:"signal,omitempty"`
	OOMKilled bool       `json:"oom_killed,omitempty"`
	Message   string     `json:"message,omitempty"`
	// OutputBytes is the total output produced so far (stdout and stderr,
	// in arrival order); the next read offset when all has been read.
	OutputBytes int64 `json:"output_bytes"`
}

// ProcessList lists background processes, running and exited.
type ProcessList struct {
	Processes []ProcessInfo `json:"processes"`
}

// ProcessOutputRequest reads a background process's output from Offset, a
// position in its combined output log (stdout and stderr in arrival order).
type ProcessOutputRequest struct {
	ID       string `json:"id"`
	Offset   int64  `json:"offset,omitempty"`
	MaxBytes int64  `json:"max_bytes,omitempty"` // 0: default 256 KiB
	// WaitMs, when there is no output at Offset yet and the process is
	// running, waits up to this long (capped by MaxOutputWait) for output
	// or the process's exit before answering, so that a follower need
	// not poll. Runners without FeatureOutputWait answer at once.
	WaitMs int64 `json:"wait_ms,omitempty"`
}

// MaxOutputWait bounds ProcessOutputRequest.WaitMs.
const MaxOutputWait = 30 * time.Second

// ProcessOutput is a slice of a process's output log. The runner keeps a
// bounded window; output older than the window is gone and Dropped says
// how many bytes between Offset and the window start were lost.
type ProcessOutput struct {
	Process    ProcessInfo `json:"process"`
	Stdout     []byte      `json:"stdout"`
	Stderr     []byte      `json:"stderr"`
	Offset     int64       `json:"offset"`      // where this slice starts
	NextOffset int64       `json:"next_offset"` // pass back to read on
	Dropped    int64       `json:"dropped"`
	More       bool        `json:"more"` // more output is already available
}

// ProcessWriteRequest writes to a background process's stdin; Close closes
// stdin after writing.
type ProcessWriteRequest struct {
	ID    string `json:"id"`
	Data  []byte `json:"data,omitempty"`
	Close bool   `json:"close,omitempty"`
}

// ProcessSignalRequest sends Signal (e.g. "SIGTERM", "TERM", "9"; default
// SIGTERM) to a background process's whole process tree.
type ProcessSignalRequest struct {
	ID     string `json:"id"`
	Signal string `json:"signal,omitempty"`
}
