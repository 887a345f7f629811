package gateway_test

import (
	"strings"
	"testing"

	"github.com/sandgate/sandgate/gateway"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		mutate  func(*gateway.Config)
		wantErr string
	}{
		{"defaults are valid", func(*gateway.Config) {}, ""},
		{"ipv6 loopback", func(c *gateway.Config) { c.Addr = "[::1]:8080" }, ""},
		{"localhost", func(c *gateway.Config) { c.Addr = "localhost:9000" }, ""},
		{"all interfaces refused without auth", func(c *gateway.Config) { c.Addr = "0.0.0.0:8080" }, "not loopback"},
		{"empty host refused", func(c *gateway.Config) { c.Addr = ":8080" }, "not loopback"},
		{"public address refused", func(c *gateway.Config) { c.Addr = "192.0.2.1:8080" }, "not loopback"},
		{"garbage address", func(c *gateway.Config) { c.Addr = "nope" }, "host:port"},
		{"unknown category", func(c *gateway.Config) { c.Categories = []string{"files", "nukes"} }, `unknown tool category "nukes"`},
		{"unknown tool", func(c *gateway.Config) { c.DisabledTools = []string{"rm_rf"} }, `unknown tool "rm_rf"`},
		{"tiny memory", func(c *gateway.Config) { c.Limits.MemoryBytes = 1 << 20 }, "limits too small"},
		// /tmp (256 MiB) + /dev/shm (64) + headroom (128) need 448 MiB.
		{"tmp leaves the runner no headroom", func(c *gateway.Config) { c.Limits.MemoryBytes = 384 << 20 }, "exceed the memory limit (384 MiB): raise --memory or lower --tmp-size"},
		{"tmp fits with headroom", func(c *gateway.Config) { c.Limits.MemoryBytes, c.Limits.TmpBytes = 256<<20, 64<<20 }, ""},
		{"tmp larger than memory", func(c *gateway.Config) { c.Limits.TmpBytes = 1 << 30 }, "/tmp (1 GiB)"},
		{"tiny workspace", func(c *gateway.Config) { c.Limits.WorkspaceBytes = 1 << 20 }, "--workspace-size"},
		{"workspace far larger than memory is fine on disk", func(c *gateway.Config) { c.Limits.WorkspaceBytes = 100 << 30 }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := gateway.Config{}.WithDefaults()
			tt.mutate(&c)
			err := c.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	c := gateway.Config{}.WithDefaults()
	if c.Addr != "127.0.0.1:8080" || c.Image != "sandgate/base:latest" || len(c.Images) != 1 {
		t.Fatalf("defaults: %+v", c)
	}
	l := c.Limits
	if l.CPUs != 1 || l.MemoryBytes != 512<<20 || l.Pids != 256 || l.WorkspaceBytes != 4<<30 || l.FileSizeBytes != 4<<30 || l.CallTimeout.Seconds() != 60 || l.IdleTTL.Minutes() != 15 || l.MaxLifetime.Hours() != 4 {
		t.Fatalf("default limits: %+v", l)
	}
}
