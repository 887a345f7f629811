package docker_test

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/sandbox"
	"github.com/sandgate/sandgate/sandbox/docker"
)

// TestNewRefuses covers what New checks before it talks to the engine.
func TestNewRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	runner := filepath.Join(dir, "runner")
	if err := os.WriteFile(runner, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	private := filepath.Join(dir, "private")
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "shared"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "runner-0700"), nil, 0o700); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		cfg     docker.Config
		wantIs  error
		wantMsg string
	}{
		{"runner missing", docker.Config{RunnerPath: filepath.Join(dir, "nope"), SocketDir: private},
			sandbox.ErrRunnerMissing, "make build"},
		{"runner is a dir", docker.Config{RunnerPath: dir, SocketDir: private}, sandbox.ErrRunnerMissing, "regular file"},
		{"runner not executable by others", docker.Config{RunnerPath: filepath.Join(dir, "runner-0700"), SocketDir: private},
			nil, "chmod 0755"},
		{"socket dir shared", docker.Config{RunnerPath: runner, SocketDir: filepath.Join(dir, "shared")}, nil, "mode 0700"},
		{"socket dir is a file", docker.Config{RunnerPath: runner, SocketDir: filepath.Join(dir, "file")}, nil, "socket dir"},
		{"socket dir relative", docker.Config{RunnerPath: runner, SocketDir: "rel"}, nil, "absolute"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := docker.New(t.Context(), tt.cfg, slog.New(slog.DiscardHandler))
			if err == nil {
				p.Close()
				t.Fatal("New succeeded")
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("err = %v, want %v", err, tt.wantIs)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("err = %v, want it to mention %q", err, tt.wantMsg)
			}
		})
	}
	if fi, err := os.Stat(filepath.Join(dir, "shared")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("New changed the mode of an existing dir: %v %v", fi.Mode(), err)
	}
}

// TestNewUnavailable: an engine that cannot be reached is ErrUnavailable
// with a message that says what to do.
func TestNewUnavailable(t *testing.T) {
	dir := t.TempDir()
	runner := filepath.Join(dir, "runner")
	if err := os.WriteFile(runner, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(dir, "no-docker.sock"))
	_, err := docker.New(t.Context(), docker.Config{RunnerPath: runner, SocketDir: filepath.Join(dir, "s")},
		slog.New(slog.DiscardHandler))
	if !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), "DOCKER_HOST") {
		t.Errorf("err = %v, want ErrUnavailable mentioning DOCKER_HOST", err)
	}
}
