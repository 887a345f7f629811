package gateway_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// E2B's Python SDKs cannot run here (no PyPI), so these tests pin, on a
// real gateway, what they send and every key they read without a
// default. Read from e2b-dev/E2B at @e2b/python-sdk@2.0.0 (August 2025)
// and 2.45 (August 2026), and e2b-dev/code-interpreter at
// @e2b/code-interpreter-python@2.0.0 and its main branch:
//
//   - packages/python-sdk/e2b/api/client/models/sandbox.py,
//     sandbox_detail.py, listed_sandbox.py, sandbox_metric.py and
//     sandbox_lifecycle.py: from_dict pops each required key (a missing
//     one is a KeyError), parses times with isoparse and state and
//     onTimeout as enums;
//   - packages/python-sdk/e2b/sandbox_sync/sandbox_api.py
//     _create_sandbox and e2b/sandbox/sandbox_api.py
//     build_lifecycle_config: the create bodies below;
//   - python/e2b_code_interpreter/models.py _parse_output: stdout and
//     stderr need text and timestamp, error name, value and traceback,
//     number_of_executions execution_count; code_interpreter_sync.py
//     run_code sends context_id, language and env_vars as null when unset.

// Keys the Python SDK's models require.
var (
	pySandboxKeys = []string{"templateID", "sandboxID", "clientID", "envdVersion"}
	pyListedKeys  = []string{"templateID", "sandboxID", "clientID", "startedAt", "endAt", "cpuCount", "memoryMB", "diskSizeMB", "state", "envdVersion"}
	pyMetricKeys  = []string{"timestamp", "timestampUnix", "cpuCount", "cpuUsedPct", "memUsed", "memTotal", "memCache", "diskUsed", "diskTotal"}
)

// requireKeys fails unless obj has every key.
func requireKeys(t *testing.T, what string, obj map[string]any, keys []string) {
	t.Helper()
	for _, k := range keys {
		if _, ok := obj[k]; !ok {
			t.Errorf("%s lacks %q, which the Python SDK reads: %v", what, k, obj)
		}
	}
}

// requireTimes fails unless each key is an ISO 8601 time (isoparse).
func requireTimes(t *testing.T, what string, obj map[string]any, keys ...string) {
	t.Helper()
	for _, k := range keys {
		s, _ := obj[k].(string)
		if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			t.Errorf("%s: %s %v is not an ISO 8601 time: %v", what, k, obj[k], err)
		}
	}
}

// TestLocalE2BCreateBodies: what each SDK version sends on a plain
// create is accepted, however it says "no pause, no auto-resume"
// (fields that leave a feature off are accepted whatever the feature,
// unknown fields are ignored), as is each way of asking for a pause at
// the timeout with or without auto-resume; a field that turns on a
// feature Sandgate lacks (memory kept under runc among them) is refused
// with what to do.
func TestLocalE2BCreateBodies(t *testing.T) {
	t.Parallel()
	base := e2bBase(startLocalGateway(t, nil))
	common := `"templateID": "base", "timeout": 300, "metadata": {"suite": "bodies"}, "secure": true, "allow_internet_access": true`
	for _, tt := range []struct {
		name, body string
		says       string // "" for accepted
	}{
		{name: "JS and Python 2.0", body: `{"autoPause": false, ` + common + `}`},
		{name: "JS and Python up to 2.41", body: `{` + common + `, "envVars": {}, "autoPause": false, "autoResume": {"enabled": false}}`},
		{name: "JS 2.20 without lifecycle", body: `{` + common + `, "network": {}}`},
		{name: "Python 2.45 without lifecycle", body: `{` + common + `, "envVars": {}}`},
		{name: "Python 2.45 with onTimeout kill", body: `{` + common + `, "envVars": {}, "autoPause": false, "autoResume": {"enabled": false}}`},
		{name: "autoPauseMemory beside autoPause off", body: `{` + common + `, "autoPause": false, "autoPauseMemory": true}`},
		{name: "lifecycle as sandbox info shows it", body: `{` + common + `, "lifecycle": {"onTimeout": "kill", "autoResume": false}}`},
		{name: "lifecycle in the SDKs' object form", body: `{` + common + `, "lifecycle": {"onTimeout": {"action": "kill"}, "autoResume": {"enabled": false}}}`},
		{name: "empty mcp, iam and volumes, nulls", body: `{` + common + `, "mcp": {}, "iam": {"tokens": {}}, "volumeMounts": [], "autoResume": null, "network": null}`},
		{name: "unknown fields", body: `{` + common + `, "futureFlag": true, "network": {"futureRule": 1}}`},
		{name: "network settings that set nothing", body: `{` + common + `, "network": {"rules": {}, "maskRequestHost": "", "egressProxy": null, "denyOut": [], "allowPublicTraffic": false}}`},

		{name: "autoPause on (JS 2.42 and later, onTimeout pause)", body: `{` + common + `, "autoPause": true}`},
		{name: "autoPause on with autoResume (JS 2.42 and later)", body: `{` + common + `, "autoPause": true, "autoResume": {"enabled": true}}`},
		{name: "autoPause on, files only (JS 2.3x to 2.41, keepMemory false)", body: `{` + common + `, "autoPause": true, "autoPauseMemory": false, "autoResume": {"enabled": false}}`},
		{name: "onTimeout pause in the SDKs' object form", body: `{` + common + `, "lifecycle": {"onTimeout": {"action": "pause", "keepMemory": false}}}`},

		{name: "autoPause keeping memory", body: `{` + common + `, "autoPause": true, "autoPauseMemory": true}`, says: "gVisor"},
		{name: "onTimeout pause keeping memory", body: `{` + common + `, "lifecycle": {"onTimeout": {"action": "pause", "keepMemory": true}}}`, says: "keepMemory: false"},
		{name: "autoResume without pause", body: `{` + common + `, "autoResume": {"enabled": true}}`, says: "autoResume needs lifecycle.onTimeout 'pause'"},
		{name: "onTimeout unknown", body: `{` + common + `, "lifecycle": {"onTimeout": "hibernate"}}`, says: `onTimeout must be "kill" or "pause"`},
		{name: "autoResume malformed", body: `{` + common + `, "autoResume": "yes"}`, says: `{"enabled": true|false}`},
		{name: "iam tokens", body: `{` + common + `, "iam": {"tokens": {"aws": {"audience": "sts", "tokenType": "jwt"}}}}`, says: "without iam tokens"},
		{name: "network rules", body: `{` + common + `, "network": {"rules": {"api.example.com": [{"transform": {"headers": {"A": "b"}}}]}}}`, says: "network.rules"},
		{name: "an MCP server", body: `{` + common + `, "mcp": {"github": {}}}`, says: "Sandgate itself serves MCP"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out map[string]any
			resp := e2bCall(t, "POST", base+"/sandboxes", nil, json.RawMessage(tt.body), &out)
			if tt.says != "" {
				if msg, _ := out["message"].(string); resp.StatusCode != http.StatusBadRequest || !strings.Contains(msg, tt.says) {
					t.Fatalf("%d %v, want 400 saying %q", resp.StatusCode, out, tt.says)
				}
				return
			}
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("%d %v, want 201", resp.StatusCode, out)
			}
			requireKeys(t, "the created sandbox", out, pySandboxKeys)
			e2bCall(t, "DELETE", base+"/sandboxes/"+out["sandboxID"].(string), nil, nil, nil)
		})
	}
}

// TestLocalE2BPythonContract: every control-plane answer the Python SDK
// decodes has the keys its models require, in the forms they parse.
func TestLocalE2BPythonContract(t *testing.T) {
	t.Parallel()
	base := e2bBase(startLocalGateway(t, nil))
	var made map[string]any
	body := json.RawMessage(`{"templateID": "base", "timeout": 300, "metadata": {"suite": "python"}, "envVars": {}, "secure": true, "allow_internet_access": true}`)
	if resp := e2bCall(t, "POST", base+"/sandboxes", nil, body, &made); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %v", resp.StatusCode, made)
	}
	requireKeys(t, "create", made, pySandboxKeys)
	id := made["sandboxID"].(string)

	var detail map[string]any
	e2bCall(t, "GET", base+"/sandboxes/"+id, nil, nil, &detail)
	requireKeys(t, "get_info", detail, pyListedKeys)
	requireTimes(t, "get_info", detail, "startedAt", "endAt")
	if !slices.Contains([]any{"running", "paused"}, detail["state"]) {
		t.Errorf("state %v is not a SandboxState", detail["state"])
	}
	life, _ := detail["lifecycle"].(map[string]any)
	if _, ok := life["autoResume"].(bool); !ok || life["onTimeout"] != "kill" {
		t.Errorf("lifecycle %v: the Python SDK requires autoResume (a bool) and onTimeout (kill or pause)", detail["lifecycle"])
	}

	for _, path := range []string{"/v2/sandboxes?metadata=suite%3Dpython", "/sandboxes"} {
		var page []map[string]any
		e2bCall(t, "GET", base+path, nil, nil, &page)
		if len(page) != 1 {
			t.Fatalf("%s: %v, want the one sandbox", path, page)
		}
		requireKeys(t, path, page[0], pyListedKeys)
		requireTimes(t, path, page[0], "startedAt", "endAt")
	}

	var metrics []map[string]any
	e2bCall(t, "GET", base+"/sandboxes/"+id+"/metrics", nil, nil, &metrics)
	if len(metrics) != 1 {
		t.Fatalf("metrics: %v", metrics)
	}
	requireKeys(t, "get_metrics", metrics[0], pyMetricKeys)
	requireTimes(t, "get_metrics", metrics[0], "timestamp")

	var conn map[string]any
	if resp := e2bCall(t, "POST", base+"/sandboxes/"+id+"/connect", nil, map[string]any{"timeout": 300}, &conn); resp.StatusCode != http.StatusOK {
		t.Fatalf("connect: %d %v", resp.StatusCode, conn)
	}
	requireKeys(t, "connect", conn, pySandboxKeys)
	checkPythonExecute(t, base, id, made["envdAccessToken"].(string))
}

// checkPythonExecute runs a cell as the Python code interpreter does and
// checks each event for the keys _parse_output reads.
func checkPythonExecute(t *testing.T, base, id, token string) {
	t.Helper()
	code := `import sys; print("out"); print("err", file=sys.stderr); 1/0`
	b, _ := json.Marshal(map[string]any{"code": code, "context_id": nil, "language": nil, "env_vars": nil})
	req, _ := http.NewRequestWithContext(t.Context(), "POST", base+"/execute", bytes.NewReader(b))
	for k, v := range map[string]string{"Content-Type": "application/json", "E2b-Sandbox-Id": id, "E2b-Sandbox-Port": "49999",
		"X-Access-Token": token, "E2B-Traffic-Access-Token": token} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("execute: %s", resp.Status)
	}
	var types []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("line %q: %v (iter_lines hands every line to json.loads)", sc.Text(), err)
		}
		typ, _ := ev["type"].(string)
		types = append(types, typ)
		switch typ {
		case "stdout", "stderr":
			requireKeys(t, typ, ev, []string{"text", "timestamp"})
		case "error":
			requireKeys(t, typ, ev, []string{"name", "value", "traceback"})
		case "number_of_executions":
			requireKeys(t, typ, ev, []string{"execution_count"})
		}
	}
	// stdout and stderr are two pipes: either may come first.
	if len(types) != 5 || !slices.Contains(types[:2], "stdout") || !slices.Contains(types[:2], "stderr") ||
		strings.Join(types[2:], " ") != "error number_of_executions end_of_execution" {
		t.Errorf("events %v, want stdout and stderr, then error, number_of_executions, end_of_execution", types)
	}
}
