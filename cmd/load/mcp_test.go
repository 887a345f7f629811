package main

import (
	"encoding/json"
	"testing"
)

// TestToolCallBody checks the hand-built tools/call request: valid
// JSON-RPC whose arguments are the given JSON, with a progress token
// equal to the id only when asked for.
func TestToolCallBody(t *testing.T) {
	for _, progress := range []bool{false, true} {
		var req struct {
			JSONRPC string `json:"jsonrpc"`
			ID      int64  `json:"id"`
			Method  string `json:"method"`
			Params  struct {
				Name      string         `json:"name"`
				Arguments map[string]any `json:"arguments"`
				Meta      *struct {
					ProgressToken int64 `json:"progressToken"`
				} `json:"_meta"`
			} `json:"params"`
		}
		body := toolCallBody(7, "run_shell", []byte(`{"command":"echo hi"}`), progress)
		if err := json.Unmarshal(body, &req); err != nil {
			t.Fatalf("progress=%v: %s: %v", progress, body, err)
		}
		if req.JSONRPC != "2.0" || req.ID != 7 || req.Method != "tools/call" || req.Params.Name != "run_shell" || req.Params.Arguments["command"] != "echo hi" {
			t.Errorf("progress=%v: %s", progress, body)
		}
		if got := req.Params.Meta != nil; got != progress {
			t.Errorf("progress=%v: _meta present %v: %s", progress, got, body)
		} else if progress && req.Params.Meta.ProgressToken != 7 {
			t.Errorf("progress token %d, want the id 7", req.Params.Meta.ProgressToken)
		}
	}
}
