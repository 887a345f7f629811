package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/auth/identity"
	"github.com/sandgate/sandgate/gateway/audit"
)

func TestParseConfig(t *testing.T) {
	t.Setenv("SANDGATE_MEMORY", "1GiB")
	t.Setenv("SANDGATE_CALL_TIMEOUT", "5s")
	c, err := parseConfig([]string{"--pids", "64", "--disable-tools", "run_code, audit_log", "--workspace-size", "100M", "--runtime", "runsc"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	g := c.Gateway
	if g.Limits.MemoryBytes != 1<<30 || g.Limits.CallTimeout != 5*time.Second || g.Limits.Pids != 64 || g.Limits.WorkspaceBytes != 100<<20 {
		t.Fatalf("limits from flags and env: %+v", g.Limits)
	}
	if len(g.DisabledTools) != 2 || g.DisabledTools[1] != "audit_log" || g.Addr != "127.0.0.1:8080" || c.Runtime != "runsc" {
		t.Fatalf("config: %+v", g)
	}
	for _, bad := range [][]string{{"--memory", "lots"}, {"--log-level", "loud"}, {"stray"}} {
		if _, err := parseConfig(bad, &bytes.Buffer{}); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

func TestParseBytes(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{"512MiB": 512 << 20, "1GiB": 1 << 30, "1.5G": 3 << 29, "64K": 64 << 10, "4096": 4096} {
		if got, err := parseBytes(in); err != nil || got != want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1MiB", "0", "ten", "5XB"} {
		if _, err := parseBytes(in); err == nil {
			t.Errorf("parseBytes(%q) accepted", in)
		}
	}
}

// TestEnvironmentGoesThroughTheFlagParser: every SANDGATE_* value is
// parsed like its flag; a bad one is an error that names the variable and
// what it accepts, never a silent default; the command line wins.
func TestEnvironmentGoesThroughTheFlagParser(t *testing.T) {
	good := []struct {
		env, value string
		check      func(c config) bool
	}{
		{"SANDGATE_CALL_TIMEOUT", "20m", func(c config) bool { return c.Gateway.Limits.CallTimeout == 20*time.Minute }},
		{"SANDGATE_DEV", "true", func(c config) bool { return c.Dev }},
		{"SANDGATE_DEV", "1", func(c config) bool { return c.Dev }},
		{"SANDGATE_DEV", "false", func(c config) bool { return !c.Dev }},
		{"SANDGATE_MEMORY", "1GiB", func(c config) bool { return c.Gateway.Limits.MemoryBytes == 1<<30 }},
		{"SANDGATE_CPUS", "0.5", func(c config) bool { return c.Gateway.Limits.CPUs == 0.5 }},
		{"SANDGATE_MAX_SANDBOXES", "3", func(c config) bool { return c.Gateway.MaxSandboxesPerTenant == 3 }},
		{"SANDGATE_WORKSPACE_BACKEND", "tmpfs", func(c config) bool { return c.WorkspaceBackend == "tmpfs" }},
		{"SANDGATE_INSTANCE", "blue", func(c config) bool { return c.Instance == "blue" }},
		{"SANDGATE_TOOLS_DIR", "/etc/sandgate/tools", func(c config) bool { return c.Gateway.ToolsDir == "/etc/sandgate/tools" }},
	}
	for _, tt := range good {
		t.Run(tt.env+"="+tt.value, func(t *testing.T) {
			t.Setenv(tt.env, tt.value)
			c, err := parseConfig(nil, &bytes.Buffer{})
			if err != nil || !tt.check(c) {
				t.Fatalf("%s=%s: err %v, config %+v", tt.env, tt.value, err, c)
			}
		})
	}
	bad := []struct{ env, value, want string }{
		{"SANDGATE_CALL_TIMEOUT", "30", "a duration like 30s"},
		{"SANDGATE_DEV", "yes", "true or false"},
		{"SANDGATE_MEMORY", "lots", "a size like 512MiB"},
		{"SANDGATE_PIDS", "many", "a whole number"},
		{"SANDGATE_CPUS", "one", "a number"},
		{"SANDGATE_WORKSPACE_BACKEND", "zfs", "auto, loop or tmpfs"},
	}
	for _, tt := range bad {
		t.Run(tt.env+"="+tt.value, func(t *testing.T) {
			t.Setenv(tt.env, tt.value)
			_, err := parseConfig(nil, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.env) {
				t.Fatalf("%s=%s: error %v; want one naming the variable and %q", tt.env, tt.value, err, tt.want)
			}
		})
	}
	t.Run("the command line wins", func(t *testing.T) {
		t.Setenv("SANDGATE_CALL_TIMEOUT", "not a duration")
		c, err := parseConfig([]string{"--call-timeout", "90s"}, &bytes.Buffer{})
		if err != nil || c.Gateway.Limits.CallTimeout != 90*time.Second {
			t.Fatalf("flag over a bad environment value: %v, %v", err, c.Gateway.Limits.CallTimeout)
		}
	})
}

func TestRefusesPublicAddressWithoutAuth(t *testing.T) {
	err := run(t.Context(), []string{"--addr", "0.0.0.0:0", "--auth", "none", "--var", t.TempDir()}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "not loopback") {
		t.Fatalf("want a refusal naming loopback, got %v", err)
	}
}

func TestDockerUnreachableIsAClearError(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	runner := filepath.Join(t.TempDir(), "runner")
	os.WriteFile(runner, []byte("#!/bin/sh\n"), 0o755)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	err := run(ctx, []string{"--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0", "--var", t.TempDir(), "--runner", runner}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(strings.ToLower(err.Error()), "docker") {
		t.Fatalf("want an error about the Docker engine, got %v", err)
	}
}

func TestAuditVerifyCommand(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	sink, err := audit.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []audit.Kind{audit.KindSessionStart, audit.KindToolStart, audit.KindToolEnd} {
		if err := sink.Append(t.Context(), &audit.Event{Kind: k, Principal: identity.Identity{Issuer: "local", Subject: "me"}}); err != nil {
			t.Fatal(err)
		}
	}
	sink.Close()
	var out bytes.Buffer
	if err := run(t.Context(), []string{"audit", "verify", path}, &out, &out); err != nil || !strings.Contains(out.String(), "3 records, chain intact") {
		t.Fatalf("verify intact log: %v %q", err, out.String())
	}
	b, _ := os.ReadFile(path)
	lines := strings.SplitAfter(string(b), "\n")
	lines[1] = strings.Replace(lines[1], `"subject":"me"`, `"subject":"eve"`, 1)
	os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600)
	err = run(t.Context(), []string{"audit", "verify", path}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("verify tampered log: %v", err)
	}
	if err := run(t.Context(), []string{"audit", "check"}, &out, &out); err == nil || !strings.Contains(err.Error(), "usage") {
		t.Fatalf("bad subcommand: %v", err)
	}
}
