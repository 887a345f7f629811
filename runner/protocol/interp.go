package protocol

// Stateful interpreter operations. One long-lived interpreter per sandbox
// (Python today) keeps variables, imports and definitions between calls.
const (
	OpInterpRun     Op = "interp.run"     // InterpRequest → InterpResult (with Stream: stdout and stderr events first)
	OpInterpRestart Op = "interp.restart" // InterpRestartRequest → InterpResult (fresh interpreter; Restarted true)
)

// InterpRequest runs one cell.
type InterpRequest struct {
	Language  string `json:"language"` // "python"
	Code      string `json:"code"`
	TimeoutMs int64  `json:"timeout_ms,omitempty"`
	// Stream asks for the cell's output as stdout and stderr events while
	// it runs; the result's Stdout and Stderr are then empty. Only for a
	// runner that announces FeatureInterpStream: another refuses the
	// field.
	Stream bool `json:"stream,omitempty"`
}

// FeatureInterpStream: interp.run honours InterpRequest.Stream.
const FeatureInterpStream = "interp-stream"

// InterpRestartRequest names the interpreter to restart.
type InterpRestartRequest struct {
	Language string `json:"language"`
}

// InterpResult is one cell's outcome.
type InterpResult struct {
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
	// Result is the repr of the cell's last expression, as a notebook
	// shows it; HasResult distinguishes "None" from no expression.
	Result    string `json:"result,omitempty"`
	HasResult bool   `json:"has_result"`
	// Error is the formatted traceback when the cell raised.
	Error      string   `json:"error,omitempty"`
	ErrorName  string   `json:"error_name,omitempty"` // e.g. "ZeroDivisionError", "KeyboardInterrupt"
	Figures    [][]byte `json:"figures,omitempty"`    // PNG images the cell produced
	TimedOut   bool     `json:"timed_out"`
	Restarted  bool     `json:"restarted"` // a new interpreter was started for this call (state is empty)
	DurationMs int64    `json:"duration_ms"`
	// Message explains an abnormal end, e.g. "the interpreter died
	// (killed: out of memory (limit 512 MiB)); a new one was started and
	// earlier state is gone".
	Message string `json:"message,omitempty"`
}
