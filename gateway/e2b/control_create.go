package e2b

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// What a create asks for beyond a template, a timeout, metadata,
// egress and its lifecycle (pause at the timeout, resume on traffic). The SDKs send their lifecycle settings on every create, each
// version its own way: e2b 2.24 to 2.41 (JS and Python) always send
// autoPause and autoResume {"enabled": false}, earlier 2.x autoPause
// false, later ones only what the caller set (sandboxApi.ts
// createSandbox, sandbox/sandbox_api.py build_lifecycle_config). A setting that leaves
// a feature off is accepted whatever the feature; one that turns on a
// feature Sandgate does not have is refused, saying what to do.

// switchBody is an on/off setting the SDKs send as {"enabled": bool}
// (autoResume); sandbox info reports it as a bare boolean, which is
// taken too.
type switchBody struct {
	Enabled bool
}

func (s *switchBody) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, &s.Enabled); err == nil {
		return nil
	}
	var obj struct {
		Enabled *bool `json:"enabled"`
	}
	if err := json.Unmarshal(b, &obj); err != nil {
		return errors.New(`autoResume must be {"enabled": true|false}`)
	}
	s.Enabled = obj.Enabled != nil && *obj.Enabled
	return nil
}

// on reports whether the setting is present and enabled.
func (s *switchBody) on() bool { return s != nil && s.Enabled }

// lifecycleBody is E2B's lifecycle policy in the shape its sandbox info
// reports, taken on create too: onTimeout is "kill" or "pause" (or the
// SDKs' {"action", "keepMemory"} form), autoResume a switch.
type lifecycleBody struct {
	OnTimeout  onTimeoutBody `json:"onTimeout"`
	AutoResume *switchBody   `json:"autoResume"`
}

// onTimeoutBody is what happens when the timeout ends.
type onTimeoutBody struct {
	Action     string
	KeepMemory *bool
}

func (o *onTimeoutBody) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, &o.Action); err == nil {
		return nil
	}
	var obj struct {
		Action     string `json:"action"`
		KeepMemory *bool  `json:"keepMemory"`
	}
	if err := json.Unmarshal(b, &obj); err != nil {
		return errors.New(`lifecycle.onTimeout must be "kill" or "pause"`)
	}
	o.Action, o.KeepMemory = obj.Action, obj.KeepMemory
	return nil
}

// pausesOnTimeout reports whether the body asks for the sandbox to be
// paused rather than killed when its timeout ends: autoPause (what the
// SDKs send for lifecycle.onTimeout 'pause') or lifecycle itself.
func (b createBody) pausesOnTimeout() bool {
	return (b.AutoPause != nil && *b.AutoPause) || (b.Lifecycle != nil && b.Lifecycle.OnTimeout.Action == "pause")
}

// autoResumes reports whether the body asks for traffic to resume the
// sandbox once paused.
func (b createBody) autoResumes() bool {
	return b.AutoResume.on() || (b.Lifecycle != nil && b.Lifecycle.AutoResume.on())
}

// keepMemory is what the body says of keeping the sandbox's memory when
// it pauses at the timeout: nil when it says nothing (the SDKs send
// nothing unless the caller set keepMemory).
func (b createBody) keepMemory() *bool {
	if b.Lifecycle != nil && b.Lifecycle.OnTimeout.KeepMemory != nil {
		return b.Lifecycle.OnTimeout.KeepMemory
	}
	return b.AutoPauseMemory
}

// KeepMemoryError is a pause, or a lifecycle, that asked to keep the
// sandbox's memory on a gateway that cannot; why says why and what can.
func KeepMemoryError(why string) error {
	return fmt.Errorf("%w: keepMemory: %s. Pass keepMemory: false to pause with the files only (Sandgate then stops the sandbox's processes and keeps /workspace)", ErrInvalid, why)
}

// iamBody is workload identity: named tokens a network transform
// injects. An empty map asks for nothing.
type iamBody struct {
	Tokens map[string]json.RawMessage `json:"tokens"`
}

// unsupported says what in the body asks for a feature Sandgate does not
// have and what to do instead, or what is wrong with its metadata; ""
// when nothing is.
func (b createBody) unsupported() string {
	switch {
	case len(b.EnvVars) > 0:
		return "envVars at creation are not supported: pass envs to each command (commands.run(cmd, {envs}))"
	case b.Lifecycle != nil && !slices.Contains([]string{"", "kill", "pause"}, b.Lifecycle.OnTimeout.Action):
		return `lifecycle.onTimeout must be "kill" or "pause"`
	case b.autoResumes() && !b.pausesOnTimeout():
		return "autoResume needs lifecycle.onTimeout 'pause': a killed sandbox cannot resume"
	case len(b.VolumeMounts) > 0:
		return "volumes are not supported: each sandbox has its own /workspace"
	case !emptyObject(b.MCP):
		return "an MCP gateway inside the sandbox is not supported: Sandgate itself serves MCP at /mcp"
	case b.IAM != nil && len(b.IAM.Tokens) > 0:
		return "workload identity tokens (iam) are not supported: create the sandbox without iam tokens"
	}
	return checkMetadata(b.Metadata)
}

// emptyObject reports whether raw is absent, null or an object with no
// members: a configuration of nothing.
func emptyObject(raw json.RawMessage) bool {
	if len(raw) == 0 {
		return true
	}
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && len(m) == 0
}

// lifecycleInfo is E2B's SandboxLifecycle as sandbox info reports it.
// The Python SDK requires both keys whenever the object is present.
type lifecycleInfo struct {
	AutoResume bool   `json:"autoResume"`
	OnTimeout  string `json:"onTimeout"`
}

// lifecycleOf is s's lifecycle as its creator set it.
func lifecycleOf(s Sandbox) lifecycleInfo {
	if s.PauseOnTimeout {
		return lifecycleInfo{OnTimeout: "pause", AutoResume: s.AutoResume}
	}
	return lifecycleInfo{OnTimeout: "kill"}
}

// States a sandbox is listed in.
const (
	stateRunning = "running"
	statePaused  = "paused"
)
