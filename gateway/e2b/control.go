package e2b

import (
	"encoding/json"
	"io"
	"math"
	"net/http"
	"time"
)

// The control plane: E2B's REST API for sandboxes, on the principal the
// gateway authenticated. Paths and shapes follow what the SDKs send and
// read; features Sandgate does not have answer 400 saying so.

// maxControlBody bounds a control-plane request body.
const maxControlBody = 1 << 20

func (a *API) controlRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /sandboxes", a.create)
	mux.HandleFunc("POST /v2/sandboxes", a.create)
	mux.HandleFunc("GET /sandboxes", a.listAll)
	mux.HandleFunc("GET /v2/sandboxes", a.listPage)
	mux.HandleFunc("GET /sandboxes/{id}", a.get)
	mux.HandleFunc("DELETE /sandboxes/{id}", a.kill)
	mux.HandleFunc("POST /sandboxes/{id}/timeout", a.setTimeout)
	mux.HandleFunc("POST /sandboxes/{id}/refreshes", a.refresh)
	mux.HandleFunc("PUT /sandboxes/{id}/network", a.setNetwork)
	mux.HandleFunc("POST /sandboxes/{id}/pause", a.pause)
	mux.HandleFunc("POST /sandboxes/{id}/connect", a.connect)
	mux.HandleFunc("POST /v2/sandboxes/{id}/connect", a.connect)
	mux.HandleFunc("POST /sandboxes/{id}/resume", a.connect)
	mux.HandleFunc("GET /sandboxes/{id}/metrics", a.metrics)
	mux.HandleFunc("POST /sandboxes/{id}/snapshots", a.createSnapshot)
	mux.HandleFunc("GET /snapshots", a.listSnapshots)
	mux.HandleFunc("DELETE /templates/{id}", a.deleteSnapshot)
	mux.HandleFunc("POST /sandboxes/{id}/fork", a.fork)
	a.unsupportedRoutes(mux)
}

// sandboxCreated answers create and connect: what an SDK needs to reach
// the sandbox's data plane.
type sandboxCreated struct {
	TemplateID         string  `json:"templateID"`
	SandboxID          string  `json:"sandboxID"`
	ClientID           string  `json:"clientID"`
	Alias              string  `json:"alias,omitempty"`
	EnvdVersion        string  `json:"envdVersion"`
	EnvdAccessToken    string  `json:"envdAccessToken"`
	TrafficAccessToken *string `json:"trafficAccessToken"`
	Domain             *string `json:"domain"`
}

// clientID is what E2B calls the cluster node a sandbox runs on.
const clientID = "sandgate"

// created reports the access token twice: @e2b/code-interpreter sends
// only the traffic token on /contexts (see headerTrafficToken).
func created(s Sandbox) sandboxCreated {
	token := s.AccessToken
	return sandboxCreated{TemplateID: s.Template, SandboxID: s.ID, ClientID: clientID, EnvdVersion: EnvdVersion,
		EnvdAccessToken: token, TrafficAccessToken: &token}
}

// sandboxDetail answers get and, without the token, list.
type sandboxDetail struct {
	TemplateID          string            `json:"templateID"`
	Alias               string            `json:"alias,omitempty"`
	SandboxID           string            `json:"sandboxID"`
	ClientID            string            `json:"clientID"`
	StartedAt           time.Time         `json:"startedAt"`
	EndAt               time.Time         `json:"endAt"`
	EnvdVersion         string            `json:"envdVersion"`
	EnvdAccessToken     string            `json:"envdAccessToken,omitempty"`
	CPUCount            int               `json:"cpuCount"`
	MemoryMB            int64             `json:"memoryMB"`
	DiskSizeMB          int64             `json:"diskSizeMB"`
	Metadata            map[string]string `json:"metadata"`
	State               string            `json:"state"`
	AllowInternetAccess bool              `json:"allowInternetAccess"`
	Network             networkState      `json:"network"`
	Lifecycle           lifecycleInfo     `json:"lifecycle"`
	Domain              *string           `json:"domain"`
	VolumeMounts        []struct{}        `json:"volumeMounts"`
}

type networkState struct {
	AllowOut []string `json:"allowOut"`
}

func detail(s Sandbox, withToken bool) sandboxDetail {
	d := sandboxDetail{TemplateID: s.Template, SandboxID: s.ID, ClientID: clientID, StartedAt: s.StartedAt, EndAt: s.EndAt,
		EnvdVersion: EnvdVersion, CPUCount: max(1, int(math.Ceil(s.CPUCount))), MemoryMB: s.MemoryMB, DiskSizeMB: s.DiskMB,
		Metadata: s.Metadata, State: stateRunning, AllowInternetAccess: len(s.Allow) > 0,
		Network: networkState{AllowOut: s.Allow}, Lifecycle: lifecycleOf(s), VolumeMounts: []struct{}{}}
	if s.Paused {
		d.State = statePaused
	}
	if d.Metadata == nil {
		d.Metadata = map[string]string{}
	}
	if d.Network.AllowOut == nil {
		d.Network.AllowOut = []string{}
	}
	if withToken {
		d.EnvdAccessToken = s.AccessToken
	}
	return d
}

// createBody is POST /v2/sandboxes. Fields Sandgate cannot honour are
// decoded so that asking for them is refused rather than ignored (see
// control_create.go); fields no one reads are ignored.
type createBody struct {
	TemplateID          string            `json:"templateID"`
	Timeout             *int64            `json:"timeout"` // seconds
	Metadata            map[string]string `json:"metadata"`
	EnvVars             map[string]string `json:"envVars"`
	AllowInternetAccess *bool             `json:"allow_internet_access"`
	Network             *networkBody      `json:"network"`
	AutoPause           *bool             `json:"autoPause"`
	AutoPauseMemory     *bool             `json:"autoPauseMemory"`
	AutoResume          *switchBody       `json:"autoResume"`
	Lifecycle           *lifecycleBody    `json:"lifecycle"`
	IAM                 *iamBody          `json:"iam"`
	VolumeMounts        []json.RawMessage `json:"volumeMounts"`
	MCP                 json.RawMessage   `json:"mcp"`
}

func (a *API) create(w http.ResponseWriter, r *http.Request) {
	var body createBody
	if !decodeBody(w, r, &body) {
		return
	}
	req := CreateRequest{Template: body.TemplateID, Metadata: body.Metadata}
	if body.Timeout != nil {
		d, err := seconds("timeout", *body.Timeout, 1, maxTimeoutSeconds)
		if err != nil {
			replyErrorStatus(w, http.StatusBadRequest, err.Error())
			return
		}
		req.Timeout = d
	}
	if problem := body.unsupported(); problem != "" {
		replyErrorStatus(w, http.StatusBadRequest, problem)
		return
	}
	allow, err := egressAllow(body.AllowInternetAccess, body.Network)
	if err != nil {
		replyErrorStatus(w, http.StatusBadRequest, err.Error())
		return
	}
	req.Allow = allow
	req.PauseOnTimeout, req.AutoResume, req.KeepMemory = body.pausesOnTimeout(), body.autoResumes(), body.keepMemory()
	s, err := a.backend.Create(r.Context(), req)
	if err != nil {
		a.fail(w, err)
		return
	}
	replyJSON(w, http.StatusCreated, created(s))
}

func (a *API) get(w http.ResponseWriter, r *http.Request) {
	s, err := a.backend.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		a.fail(w, err)
		return
	}
	replyJSON(w, http.StatusOK, detail(s, true))
}

func (a *API) kill(w http.ResponseWriter, r *http.Request) {
	if err := a.backend.Kill(r.Context(), r.PathValue("id")); err != nil {
		a.fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// timeoutBody is POST /sandboxes/{id}/timeout and /connect.
type timeoutBody struct {
	Timeout *int64 `json:"timeout"` // seconds
}

func (a *API) setTimeout(w http.ResponseWriter, r *http.Request) {
	var body timeoutBody
	if !decodeBody(w, r, &body) {
		return
	}
	if body.Timeout == nil {
		replyErrorStatus(w, http.StatusBadRequest, "timeout (seconds) is required")
		return
	}
	d, err := seconds("timeout", *body.Timeout, 1, maxTimeoutSeconds)
	if err != nil {
		replyErrorStatus(w, http.StatusBadRequest, err.Error())
		return
	}
	if _, err := a.backend.SetTimeout(r.Context(), r.PathValue("id"), d); err != nil {
		a.fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// refresh is the older keep-alive: the sandbox lives duration seconds
// (default 60) from now.
func (a *API) refresh(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Duration *int64 `json:"duration"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	d := time.Minute
	if body.Duration != nil {
		var err error
		if d, err = seconds("duration", *body.Duration, 1, maxRefreshSeconds); err != nil {
			replyErrorStatus(w, http.StatusBadRequest, err.Error())
			return
		}
	}
	if _, err := a.backend.SetTimeout(r.Context(), r.PathValue("id"), d); err != nil {
		a.fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// pauseBody is POST /sandboxes/{id}/pause: memory is the SDK's
// keepMemory.
type pauseBody struct {
	Memory *bool `json:"memory"`
}

// pause answers 204 once the sandbox is paused, 409 when it was paused
// already (the SDKs then report false).
func (a *API) pause(w http.ResponseWriter, r *http.Request) {
	var body pauseBody
	if !decodeBody(w, r, &body) {
		return
	}
	if err := a.backend.Pause(r.Context(), r.PathValue("id"), body.Memory); err != nil {
		a.fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// connectBody is POST /sandboxes/{id}/connect and /resume: the timeout
// to set, and memory false for the SDK's onResume "reboot" (start the
// sandbox's processes afresh even when its memory was kept).
type connectBody struct {
	Timeout *int64 `json:"timeout"` // seconds
	Memory  *bool  `json:"memory"`
}

// connect hands the caller a sandbox's data-plane token, resuming it
// when it is paused (201) or as it runs (200), and sets its timeout
// when given.
func (a *API) connect(w http.ResponseWriter, r *http.Request) {
	var body connectBody
	if !decodeBody(w, r, &body) {
		return
	}
	var timeout time.Duration
	if body.Timeout != nil && *body.Timeout != 0 { // 0: keep the timeout it has
		d, bad := seconds("timeout", *body.Timeout, 1, maxTimeoutSeconds)
		if bad != nil {
			replyErrorStatus(w, http.StatusBadRequest, bad.Error())
			return
		}
		timeout = d
	}
	reboot := body.Memory != nil && !*body.Memory
	s, resumed, err := a.backend.Connect(r.Context(), r.PathValue("id"), timeout, reboot)
	if err != nil {
		a.fail(w, err)
		return
	}
	status := http.StatusOK
	if resumed {
		status = http.StatusCreated
	}
	replyJSON(w, status, created(s))
}

// decodeBody reads a small JSON body into v; an empty body leaves v as
// it is. It answers 400 itself and reports false on a bad body.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxControlBody))
	if err != nil {
		replyErrorStatus(w, http.StatusBadRequest, "read request body: "+err.Error())
		return false
	}
	if len(body) == 0 {
		return true
	}
	if err := json.Unmarshal(body, v); err != nil {
		replyErrorStatus(w, http.StatusBadRequest, "request body is not the JSON expected: "+err.Error())
		return false
	}
	return true
}

// fail answers a Backend error with its status and text.
func (a *API) fail(w http.ResponseWriter, err error) {
	status := dataStatus(err)
	if status == http.StatusInternalServerError {
		a.log.Error("e2b API call failed", "error", err)
	}
	replyErrorStatus(w, status, err.Error())
}
