package gateway_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandgate/sandgate/gateway/audit"
)

// newSandboxID makes a sessionless sandbox and returns its id.
func newSandboxID(t *testing.T, c *client.Client) string {
	t.Helper()
	res := mustOK(t, "sandbox_create", call(t, c, "sandbox_create", nil))
	id, _ := structuredAs[map[string]any](t, res)["sandbox_id"].(string)
	if id == "" {
		t.Fatalf("sandbox_create returned no sandbox_id: %s", text(res))
	}
	return id
}

func write(t *testing.T, c *client.Client, id, path, content, encoding string) {
	t.Helper()
	args := map[string]any{"path": path, "content": content, "sandbox_id": id}
	if encoding != "" {
		args["encoding"] = encoding
	}
	mustOK(t, "write_file", call(t, c, "write_file", args))
}

func readResource(t *testing.T, c *client.Client, uri string) (*mcp.ReadResourceResult, error) {
	t.Helper()
	req := mcp.ReadResourceRequest{}
	req.Params.URI = uri
	return c.ReadResource(t.Context(), req)
}

func listURIs(t *testing.T, c *client.Client) []string {
	t.Helper()
	res, err := c.ListResources(t.Context(), mcp.ListResourcesRequest{})
	if err != nil {
		t.Fatalf("resources/list: %v", err)
	}
	var uris []string
	for _, r := range res.Resources {
		uris = append(uris, r.URI)
	}
	return uris
}

// TestLocalResourcesRead: files read as text or blob with a MIME type, a
// directory as its listing, and a missing file, a sandbox of someone
// else's session or a file above the cap as clear errors; every read is
// audited like a read-only tool call.
func TestLocalResourcesRead(t *testing.T) {
	t.Parallel()
	tg := startLocalGateway(t, nil)
	c := modernClient(t, tg.URL)
	id := newSandboxID(t, c)
	write(t, c, id, "README.md", "# Hello\n", "")
	write(t, c, id, "src/main.go", "package main\n", "")
	write(t, c, id, "img.png", base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")), "base64")
	write(t, c, id, "noext", base64.StdEncoding.EncodeToString([]byte{0, 1, 2, 0xff}), "base64")
	write(t, c, id, "space name.txt", "spaced", "")

	tests := []struct {
		uri, mime, text string
		blob            bool
	}{
		{uri: "sandbox://" + id + "/README.md", mime: "text/markdown", text: "# Hello\n"},
		{uri: "sandbox://" + id + "/src/main.go", mime: "text/x-go", text: "package main\n"},
		{uri: "sandbox://" + id + "/space%20name.txt", mime: "text/plain", text: "spaced"},
		{uri: "sandbox://" + id + "/img.png", mime: "image/png", blob: true},
		{uri: "sandbox://" + id + "/noext", mime: "application/octet-stream", blob: true},
		{uri: "sandbox://" + id + "/", mime: "inode/directory", text: "README.md"},
		{uri: "sandbox://" + id + "/src", mime: "inode/directory", text: "main.go"},
	}
	for _, tc := range tests {
		res, err := readResource(t, c, tc.uri)
		if err != nil {
			t.Fatalf("read %s: %v", tc.uri, err)
		}
		switch ct := res.Contents[0].(type) {
		case mcp.TextResourceContents:
			if tc.blob || !strings.HasPrefix(ct.MIMEType, tc.mime) || !strings.Contains(ct.Text, tc.text) || ct.URI != tc.uri {
				t.Errorf("read %s = text %q (%s), want %q (%s)", tc.uri, ct.Text, ct.MIMEType, tc.text, tc.mime)
			}
		case mcp.BlobResourceContents:
			if !tc.blob || ct.MIMEType != tc.mime || ct.Blob == "" {
				t.Errorf("read %s = blob (%s), want %s", tc.uri, ct.MIMEType, tc.mime)
			}
		}
	}

	// Not found: a missing file, an unknown sandbox, a URI of no scheme we serve.
	for _, uri := range []string{"sandbox://" + id + "/missing.txt", "sandbox://0123456789abcdef/x", "file:///etc/hosts"} {
		if _, err := readResource(t, c, uri); !errors.Is(err, mcp.ErrInvalidParams) || !strings.Contains(err.Error(), "not found") {
			t.Errorf("read %s: %v, want the 2026-07-28 resource-not-found error (-32602)", uri, err)
		}
	}
	// A legacy session gets -32002 for a sandbox that is not its own.
	legacy := legacyClient(t, tg.URL)
	if _, err := readResource(t, legacy, "sandbox://"+id+"/README.md"); err != nil {
		t.Fatalf("a sessionless sandbox of the same principal from a legacy session: %v", err)
	}
	mustOK(t, "write_file", call(t, legacy, "write_file", map[string]any{"path": "own", "content": "x"}))
	var sessionBox string
	for _, u := range listURIs(t, legacy) {
		if strings.HasSuffix(u, "/own") {
			sessionBox = strings.TrimSuffix(strings.TrimPrefix(u, "sandbox://"), "/own")
		}
	}
	if sessionBox == "" {
		t.Fatal("the legacy session's own sandbox is not listed for it")
	}
	other := legacyClient(t, tg.URL)
	if _, err := readResource(t, other, "sandbox://"+sessionBox+"/own"); !errors.Is(err, mcp.ErrResourceNotFound) {
		t.Errorf("another session reading a session's sandbox: %v, want -32002", err)
	}
	// The error names the URI asked for in its data, as the spec says it
	// should (SEP-2164): for a sandbox not the caller's, a missing file,
	// and a URI of no scheme served (mcp-go's own not-found).
	for _, uri := range []string{"sandbox://" + sessionBox + "/own", "sandbox://" + id + "/missing%20%22quoted%22.txt", `test://none/"quoted"`} {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 9, "method": "resources/read", "params": map[string]string{"uri": uri}})
		r := postRaw(t, tg.URL, other.GetSessionId(), string(body), nil)
		if got := notFoundURI(t, r.Body); r.Code != mcp.RESOURCE_NOT_FOUND || got != uri {
			t.Errorf("resources/read %s: code %d, data.uri %q; want %d and the URI (%s)", uri, r.Code, got, mcp.RESOURCE_NOT_FOUND, r.Body)
		}
	}

	var reads int
	for _, e := range auditRecords(t, tg.AuditPath) {
		if e.Tool == "resources/read" && e.Kind == audit.KindToolEnd && e.SandboxID == id {
			reads++
		}
	}
	if reads < len(tests) {
		t.Errorf("%d resources/read end records for %d reads", reads, len(tests))
	}
}

// TestLocalResourcesList: the caller's sandboxes' workspaces, top levels
// and recent files, and the audit resource, a page at a time.
func TestLocalResourcesList(t *testing.T) {
	t.Parallel()
	tg := startLocalGateway(t, nil)
	c := modernClient(t, tg.URL)
	id := newSandboxID(t, c)
	for i := range 60 {
		write(t, c, id, "f"+string(rune('a'+i/26))+string(rune('a'+i%26))+".txt", "x", "")
	}
	write(t, c, id, "deep/er/recent.txt", "new", "")
	first, err := c.ListResourcesByPage(t.Context(), mcp.ListResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if first.NextCursor == "" || len(first.Resources) == 0 {
		t.Fatalf("first page of %d resources has no next cursor", len(first.Resources))
	}
	uris := listURIs(t, c) // follows every cursor
	for _, want := range []string{"audit://me/recent", "sandbox://" + id + "/", "sandbox://" + id + "/faa.txt", "sandbox://" + id + "/deep/er/recent.txt"} {
		if !slices.Contains(uris, want) {
			t.Errorf("resources/list lacks %s (%d listed)", want, len(uris))
		}
	}
	if len(uris) <= len(first.Resources) {
		t.Errorf("all pages hold %d resources, the first %d", len(uris), len(first.Resources))
	}
	tmpl, err := c.ListResourceTemplates(t.Context(), mcp.ListResourceTemplatesRequest{})
	if err != nil || len(tmpl.ResourceTemplates) != 1 || tmpl.ResourceTemplates[0].URITemplate.Raw() != "sandbox://{sandbox_id}/{+path}" {
		t.Fatalf("resource templates: %+v %v", tmpl, err)
	}
	// The audit resource holds the caller's records.
	res, err := readResource(t, c, "audit://me/recent")
	if err != nil || !strings.Contains(res.Contents[0].(mcp.TextResourceContents).Text, "resources/read") && !strings.Contains(res.Contents[0].(mcp.TextResourceContents).Text, "write_file") {
		t.Fatalf("audit resource: %v", err)
	}
}

// notFoundURI returns the data.uri of the JSON-RPC error in an MCP
// response body, JSON or the last event of an SSE stream.
func notFoundURI(t *testing.T, body string) string {
	t.Helper()
	message := body
	for line := range strings.Lines(body) {
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			message = data
		}
	}
	var m struct {
		Error struct {
			Data struct {
				URI string `json:"uri"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(message), &m); err != nil {
		t.Fatalf("response %q: %v", body, err)
	}
	return m.Error.Data.URI
}
