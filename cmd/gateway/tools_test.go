package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestToolsCheck: `gateway tools check DIR` passes a good directory and
// fails a bad one, naming each refused file and field.
func TestToolsCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := `{"name":"wc","description":"Count words.","inputSchema":{"type":"object"},"command":["wc","-w"],"scope":"sandbox:exec","timeout":"30s"}`
	if err := os.WriteFile(filepath.Join(dir, "wc.json"), []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := runTools([]string{"check", dir}, &out); err != nil || !strings.Contains(out.String(), "ok      wc.json: tool wc") {
		t.Fatalf("good directory: %v\n%s", err, out.String())
	}
	// The manifest's timeout is above a 10 s call timeout.
	out.Reset()
	if err := runTools([]string{"check", "--call-timeout", "10s", dir}, &out); err == nil || !strings.Contains(out.String(), "refused wc.json: timeout: 30s is above") {
		t.Fatalf("timeout above --call-timeout: %v\n%s", err, out.String())
	}
	bad := `{"name":"run_shell","description":"x","inputSchema":{"type":"object"},"command":["true"],"scope":"root"}`
	if err := os.WriteFile(filepath.Join(dir, "bad.json"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	err := runTools([]string{"check", dir}, &out)
	for _, want := range []string{"refused bad.json: name: \"run_shell\" is a built-in", "refused bad.json: scope: \"root\"", "ok      wc.json"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if err == nil || !strings.Contains(err.Error(), "1 of 2 manifests refused") {
		t.Errorf("bad directory: %v", err)
	}
	if err := runTools([]string{"check"}, &out); err == nil {
		t.Error("check without a directory succeeded")
	}
}
