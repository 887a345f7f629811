package gateway_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/sandbox/sandboxtest"
)

// TestReadFromHost: read_file of a plain file in a Docker sandbox's
// on-disk workspace is served by the gateway from its own host, with the
// very result the runner gives for the same request; everything the host
// could answer differently from the sandbox (symlinks, files the sandbox
// user may not read, paths outside the workspace, errors) is left to the
// runner. Afterwards no thread of the gateway keeps the sandbox user's
// file system ids.
func TestReadFromHost(t *testing.T) {
	t.Parallel()
	tg := startGateway(t, nil)
	c := legacyClient(t, tg.URL)
	r, res := shell(t, c, `cd /workspace && printf 'one\ntwo\nthree\n' > a.txt && mkdir sub dir locked &&
printf 'h\303\251llo' > sub/utf8.txt && printf '\000\001\377' > bin && : > empty && seq 1 2000 > lines.txt &&
head -c 11000000 /dev/zero > big && ln -s a.txt link && ln -s /etc/hostname abslink && mkfifo fifo &&
echo secret > secret && chmod 000 secret && echo hidden > locked/c.txt && chmod 000 locked`, nil)
	if r.ExitCode != 0 {
		t.Fatalf("setting up the files: %s", text(res))
	}
	id := structuredAs[map[string]any](t, mustOK(t, "sandbox_info", call(t, c, "sandbox_info", nil)))["sandbox_id"].(string)

	served := []protocol.ReadRequest{
		{Path: "a.txt"},
		{Path: "/workspace/a.txt"},
		{Path: "sub/../a.txt"},
		{Path: "sub/utf8.txt"},
		{Path: "sub/utf8.txt", Offset: 0, Limit: 2}, // ends inside "é"
		{Path: "bin"},
		{Path: "empty"},
		{Path: "a.txt", Encoding: protocol.EncodingBase64},
		{Path: "lines.txt", StartLine: 10, EndLine: 20},
		{Path: "lines.txt", Offset: 100, Limit: 50},
		{Path: "big", Offset: 10_999_990, Limit: 100},
	}
	for _, req := range served {
		host, hostErr, runner, runnerErr := tg.gw.ReadBothWays(t.Context(), id, req)
		if hostErr != nil || runnerErr != nil {
			t.Errorf("%+v: host %v, runner %v; want both to read it", req, hostErr, runnerErr)
			continue
		}
		if !reflect.DeepEqual(host, runner) {
			t.Errorf("%+v: the host read\n%+v\nthe runner read\n%+v", req, host, runner)
		}
	}

	declined := []struct {
		req    protocol.ReadRequest
		runner string // in the runner's error, "" when the runner reads it
	}{
		{protocol.ReadRequest{Path: "link"}, ""},    // a symlink, even one inside
		{protocol.ReadRequest{Path: "abslink"}, ""}, // the sandbox's /etc, not the host's
		{protocol.ReadRequest{Path: "/etc/hostname"}, ""},
		{protocol.ReadRequest{Path: "/workspace/../etc/hostname"}, ""},
		{protocol.ReadRequest{Path: "secret"}, "permission denied"},
		{protocol.ReadRequest{Path: "locked/c.txt"}, "permission denied"},
		{protocol.ReadRequest{Path: "fifo"}, "named pipe"},
		{protocol.ReadRequest{Path: "dir"}, "is a directory"},
		{protocol.ReadRequest{Path: "missing"}, "no such file"},
		{protocol.ReadRequest{Path: "big"}, "above"},
		{protocol.ReadRequest{Path: "a.txt", Offset: 1, StartLine: 1}, "not both"},
	}
	for _, d := range declined {
		_, hostErr, runner, runnerErr := tg.gw.ReadBothWays(t.Context(), id, d.req)
		if hostErr == nil {
			t.Errorf("%+v: the host read it; want it left to the runner", d.req)
		}
		switch {
		case d.runner == "" && runnerErr != nil:
			t.Errorf("%+v: the runner failed: %v", d.req, runnerErr)
		case d.runner == "" && runner.Content == "":
			t.Errorf("%+v: the runner read nothing", d.req)
		case d.runner != "" && (runnerErr == nil || !strings.Contains(runnerErr.Error(), d.runner)):
			t.Errorf("%+v: the runner said %v; want an error with %q", d.req, runnerErr, d.runner)
		}
	}

	// Through MCP: the served reads count as the host's, the refused one
	// and the directory as the runner's, and the caller sees the runner's
	// error and listing.
	before := scrape(t, tg)
	if got := text(mustOK(t, "read_file", call(t, c, "read_file", map[string]any{"path": "a.txt"}))); got != "one\ntwo\nthree\n" {
		t.Errorf("read_file a.txt: %q", got)
	}
	res = call(t, c, "read_file", map[string]any{"path": "secret"})
	if !res.IsError || !strings.Contains(text(res), "permission denied") {
		t.Errorf("read_file of a file without a read bit: %s; want the runner's permission error", text(res))
	}
	file, err := readResource(t, c, "sandbox://"+id+"/sub/utf8.txt")
	if err != nil || len(file.Contents) != 1 {
		t.Fatalf("resources/read of a file: %+v, %v", file, err)
	}
	if tc, ok := file.Contents[0].(mcp.TextResourceContents); !ok || tc.Text != "h\u00e9llo" || tc.MIMEType != "text/plain" {
		t.Errorf("resources/read of a file: %+v; want its text as text/plain", file.Contents[0])
	}
	dir, err := readResource(t, c, "sandbox://"+id+"/sub")
	if err != nil || len(dir.Contents) != 1 {
		t.Fatalf("resources/read of a directory: %+v, %v", dir, err)
	}
	if tc, ok := dir.Contents[0].(mcp.TextResourceContents); !ok || !strings.Contains(tc.Text, "utf8.txt") {
		t.Errorf("resources/read of a directory: %+v; want its listing", dir.Contents[0])
	}
	after := scrape(t, tg)
	for via, want := range map[string]float64{"host": 2, "runner": 2} {
		name := `sandgate_file_reads_total{via="` + via + `"}`
		if got := after[name] - before[name]; got != want {
			t.Errorf("%s moved by %v, want %v", name, got, want)
		}
	}
	sandboxtest.AssertRootFSIDs(t)
}
