package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/gateway/audit"
)

// TestLocalE2BDataPlaneRefusalsAudited: every refused data-plane request
// leaves a tool.denied record, as MCP's refusals do: a missing, forged or
// foreign access token, a call outside the token's scopes, a token whose
// API key was revoked. Before, none did. And a revocation ends the key's
// access tokens at once (they worked until the sandbox ended).
func TestLocalE2BDataPlaneRefusalsAudited(t *testing.T) {
	t.Parallel()
	og, keys := e2bKeyGateway(t)
	keyA, recA, err := keys.Add("ci", "tenant-a", []string{auth.ScopeExec, auth.ScopeFilesRead, auth.ScopeFilesWrite})
	if err != nil {
		t.Fatal(err)
	}
	keyR, _, err := keys.Add("reader", "tenant-b", []string{auth.ScopeExec, auth.ScopeFilesRead})
	if err != nil {
		t.Fatal(err)
	}
	create := func(key string) e2bCreated {
		t.Helper()
		var made e2bCreated
		if resp := e2bCall(t, "POST", og.Base+"/v2/sandboxes", map[string]string{"X-API-KEY": key}, map[string]any{"templateID": "base"}, &made); resp.StatusCode != http.StatusCreated {
			t.Fatalf("create: %d", resp.StatusCode)
		}
		return made
	}
	a, r := create(keyA), create(keyR)
	envd := func(id, token string) map[string]string {
		h := map[string]string{"E2b-Sandbox-Id": id}
		if token != "" {
			h["X-Access-Token"] = token
		}
		return h
	}
	forged := a.EnvdAccessToken[:len(a.EnvdAccessToken)-4] + "0000"
	for _, tc := range []struct {
		name, method, path string
		header             map[string]string
		status             int
		tool, reason       string
	}{
		{"missing token", "GET", "/files?path=x", envd(a.SandboxID, ""), http.StatusNotFound, "e2b.files.download", "no access token"},
		{"forged token", "GET", "/files?path=x", envd(a.SandboxID, forged), http.StatusNotFound, "e2b.files.download", "access token not valid for this sandbox"},
		{"another sandbox's token", "POST", "/process.Process/List", envd(a.SandboxID, r.EnvdAccessToken), http.StatusNotFound, "e2b.process.List", "access token not valid for this sandbox"},
		{"no such sandbox", "POST", "/filesystem.Filesystem/Stat", envd("0123456789abcdef", a.EnvdAccessToken), http.StatusNotFound, "e2b.filesystem.Stat", "no such sandbox"},
		{"outside the token's scopes", "POST", "/files?path=y", withHeader(envd(r.SandboxID, r.EnvdAccessToken), "Content-Type", "application/octet-stream"), http.StatusForbidden, "e2b.files.upload", "insufficient scope: needs " + auth.ScopeFilesWrite},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(auditRecords(t, og.AuditPath))
			var body any = map[string]any{}
			if tc.method == "GET" {
				body = nil
			}
			if resp := e2bCall(t, tc.method, og.Base+tc.path, tc.header, body, nil); resp.StatusCode != tc.status {
				t.Errorf("%s %s: %d, want %d", tc.method, tc.path, resp.StatusCode, tc.status)
			}
			if !deniedAfter(t, og.AuditPath, before, tc.tool, tc.reason) {
				t.Errorf("no tool.denied record of %s saying %q", tc.tool, tc.reason)
			}
		})
	}

	// A revoked key's sandbox stops answering its access token at once.
	upload := withHeader(envd(a.SandboxID, a.EnvdAccessToken), "Content-Type", "application/octet-stream")
	if resp := e2bCall(t, "POST", og.Base+"/files?path=kept.txt", upload, "x", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("upload with the live key's token: %d", resp.StatusCode)
	}
	download := func() int {
		return e2bCall(t, "GET", og.Base+"/files?path=kept.txt", envd(a.SandboxID, a.EnvdAccessToken), nil, nil).StatusCode
	}
	if status := download(); status != http.StatusOK {
		t.Fatalf("download with the live key's token: %d", status)
	}
	if err := keys.Revoke(recA.ID); err != nil {
		t.Fatal(err)
	}
	before := len(auditRecords(t, og.AuditPath))
	if status := download(); status != http.StatusNotFound {
		t.Errorf("download with a revoked key's token: %d, want 404", status)
	}
	if !deniedAfter(t, og.AuditPath, before, "e2b.files.download", "the API key that created the sandbox is revoked") {
		t.Errorf("no tool.denied record of the revoked key's token")
	}
	if rep, err := audit.VerifyFile(og.AuditPath); err != nil || !rep.OK() {
		t.Fatalf("audit log: %+v %v", rep, err)
	}
}

// deniedAfter reports whether the audit log at path has, after its first
// skip records, a tool.denied record of tool whose reason contains reason.
func deniedAfter(t *testing.T, path string, skip int, tool, reason string) bool {
	t.Helper()
	for _, ev := range auditRecords(t, path)[skip:] {
		if ev.Kind == audit.KindToolDenied && ev.Tool == tool && strings.Contains(ev.DenyReason, reason) {
			return true
		}
	}
	return false
}

// withHeader returns a copy of h with k set to v.
func withHeader(h map[string]string, k, v string) map[string]string {
	m := map[string]string{k: v}
	for hk, hv := range h {
		m[hk] = hv
	}
	return m
}
