package resources

import (
	"strings"
	"testing"
)

func TestSandboxURI(t *testing.T) {
	tests := []struct {
		uri     string
		id      string
		path    string
		wantErr string
	}{
		{uri: "sandbox://abc/", id: "abc", path: ""},
		{uri: "sandbox://abc/src/main.go", id: "abc", path: "src/main.go"},
		{uri: "sandbox://abc//etc/hosts", id: "abc", path: "/etc/hosts"},
		{uri: "sandbox://abc/a%20b/c%25d", id: "abc", path: "a b/c%d"},
		{uri: "sandbox://abc", wantErr: "names no sandbox"},
		{uri: "sandbox:///x", wantErr: "names no sandbox"},
		{uri: "file:///etc/hosts", wantErr: "not a sandbox:// URI"},
		{uri: "sandbox://abc/%zz", wantErr: "percent-encoding"},
		{uri: "sandbox://abc/a%00b", wantErr: "NUL"},
	}
	for _, tc := range tests {
		t.Run(tc.uri, func(t *testing.T) {
			ref, err := parseSandboxURI(tc.uri)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parse %q: %v, want %q", tc.uri, err, tc.wantErr)
				}
				return
			}
			if err != nil || ref.sandboxID != tc.id || ref.path != tc.path {
				t.Fatalf("parse %q = %+v %v, want %s %q", tc.uri, ref, err, tc.id, tc.path)
			}
			if back := sandboxURI(ref.sandboxID, ref.path); back != tc.uri {
				t.Errorf("sandboxURI(%s, %q) = %q, want %q", ref.sandboxID, ref.path, back, tc.uri)
			}
		})
	}
}

// FuzzSandboxURI: every path a URI is made of parses back to itself, and
// no input makes the parser panic.
func FuzzSandboxURI(f *testing.F) {
	for _, s := range []string{"src/main.go", "/etc/hosts", "a b", "%", "?#", "", "../../x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		_, _ = parseSandboxURI("sandbox://x/" + path)
		if strings.IndexByte(path, 0) >= 0 {
			return
		}
		ref, err := parseSandboxURI(sandboxURI("id", path))
		if err != nil || ref.sandboxID != "id" || ref.path != path {
			t.Fatalf("round trip of %q: %+v %v", path, ref, err)
		}
	})
}

func TestMimeOf(t *testing.T) {
	tests := []struct {
		path string
		data string
		want string
		blob bool
	}{
		{"a.go", "package a", "text/x-go", false},
		{"a.md", "# x", "text/markdown", false},
		{"a.json", "{}", "application/json", false},
		{"a.png", "\x89PNG\r\n\x1a\n", "image/png", true},
		{"a.svg", "<svg/>", "image/svg+xml", false},
		{"noext", "plain words", "text/plain; charset=utf-8", false},
		{"noext", "\x00\x01", "application/octet-stream", true},
	}
	for _, tc := range tests {
		got := mimeOf(tc.path, []byte(tc.data))
		if got != tc.want || binaryMIME(got) != tc.blob {
			t.Errorf("mimeOf(%s) = %q (blob %v), want %q (blob %v)", tc.path, got, binaryMIME(got), tc.want, tc.blob)
		}
	}
}
