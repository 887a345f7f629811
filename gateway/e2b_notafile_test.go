package gateway_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestLocalE2BDownloadNotAFile: downloading a socket, a FIFO, a directory
// or a device is the client's mistake, answered with a 4xx that says what
// the path is; a socket answered 500. And an upload path that is not
// UTF-8 is refused, not silently rewritten.
func TestLocalE2BDownloadNotAFile(t *testing.T) {
	t.Parallel()
	tg := startLocalGateway(t, nil)
	base := e2bBase(tg)
	var made e2bCreated
	if resp := e2bCall(t, "POST", base+"/v2/sandboxes", nil, map[string]any{"templateID": "base"}, &made); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d", resp.StatusCode)
	}
	c := modernClient(t, tg.URL)
	mustOK(t, "run_shell", call(t, c, "run_shell", map[string]any{"sandbox_id": made.SandboxID,
		"command": `mkfifo fifo && mkdir dir && python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind("sock")' && pwd`}))
	envd := map[string]string{"E2b-Sandbox-Id": made.SandboxID, "X-Access-Token": made.EnvdAccessToken}
	for _, tc := range []struct{ path, want string }{
		{"sock", "socket"}, {"fifo", "named pipe"}, {"dir", "directory"}, {"/dev/null", "device"},
	} {
		resp := e2bCall(t, "GET", base+"/files?path="+tc.path, envd, nil, nil)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode < 400 || resp.StatusCode >= 500 || !strings.Contains(string(body), tc.want) {
			t.Errorf("download %s: %d %s; want a 4xx saying it is a %s", tc.path, resp.StatusCode, body, tc.want)
		}
	}
	// An upload to a path with a byte that is not UTF-8 (%ff): refused,
	// and nothing written under the name the JSON encoder would make of it.
	for _, ct := range []string{"application/octet-stream"} {
		resp := e2bCall(t, "POST", base+"/files?path=bad%ff.txt", map[string]string{"E2b-Sandbox-Id": made.SandboxID,
			"X-Access-Token": made.EnvdAccessToken, "Content-Type": ct}, "x", nil)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "not valid UTF-8") {
			t.Errorf("upload to bad\\xff.txt: %d %s; want 400 saying the path is not UTF-8", resp.StatusCode, body)
		}
	}
	res := mustOK(t, "list_directory", call(t, c, "list_directory", map[string]any{"sandbox_id": made.SandboxID, "path": "."}))
	if strings.Contains(text(res), "bad") {
		t.Errorf("the refused upload wrote a file: %s", text(res))
	}
	resp := e2bCall(t, "GET", base+"/files?path=bad%ff.txt", envd, nil, nil)
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("download of bad\\xff.txt: %d, want 400", resp.StatusCode)
	}
}
