package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sandgate/sandgate/gateway"
	"github.com/sandgate/sandgate/sandbox"
)

// config is the gateway binary's whole configuration: the gateway's own
// plus what only main needs.
type config struct {
	Gateway    gateway.Config
	HTTP       gateway.HTTPOptions
	RunnerPath string
	Instance   string
	Runtime    string // OCI runtime for sandboxes, e.g. runsc; empty: the engine's default
	LogLevel   slog.Level

	AuthMode              string // embedded, external or none
	PublicURL             string // the gateway's origin as clients see it
	Issuer                string // external issuer (implies AuthMode external)
	TenantClaim           string
	IntrospectionURL      string
	IntrospectionClientID string
	IntrospectionSecret   string
	Dev                   bool // dev user on first start; http://localhost client metadata documents
}

// parseConfig reads flags, each with an environment fallback
// (SANDGATE_<FLAG> with dashes as underscores).
func parseConfig(args []string, stderr io.Writer) (config, error) {
	var c config
	g := &c.Gateway
	d := sandbox.DefaultLimits
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&g.Addr, "addr", env("ADDR", "127.0.0.1:8080"), "listen address (loopback only until authentication is configured)")
	fs.StringVar(&g.VarDir, "var", env("VAR", "var"), "directory for the audit log and sandbox sockets")
	fs.StringVar(&g.Image, "image", env("IMAGE", "sandgate/base:latest"), "default sandbox image")
	images := fs.String("images", env("IMAGES", ""), "comma-separated extra images sandbox_create may ask for")
	fs.StringVar(&c.RunnerPath, "runner", env("RUNNER", defaultRunner()), "path of the static runner binary to inject into sandboxes")
	fs.StringVar(&c.Runtime, "runtime", env("RUNTIME", ""), "OCI runtime for sandboxes (e.g. runsc for gVisor, kata-runtime); default: the engine's")
	fs.StringVar(&c.Instance, "instance", env("INSTANCE", "default"), "name scoping this gateway's containers (reconciliation only touches its own)")
	fs.Float64Var(&g.Limits.CPUs, "cpus", envFloat("CPUS", d.CPUs), "CPU cores per sandbox")
	memory := fs.String("memory", env("MEMORY", "512MiB"), "memory per sandbox (also the memory+swap limit)")
	fs.Int64Var(&g.Limits.Pids, "pids", int64(envFloat("PIDS", float64(d.Pids))), "max processes/threads per sandbox")
	workspace := fs.String("workspace-size", env("WORKSPACE_SIZE", "1GiB"), "size of each sandbox's /workspace")
	tmp := fs.String("tmp-size", env("TMP_SIZE", "256MiB"), "size of each sandbox's /tmp")
	fs.DurationVar(&g.Limits.CallTimeout, "call-timeout", envDuration("CALL_TIMEOUT", d.CallTimeout), "default and maximum wall clock per tool call")
	fs.DurationVar(&g.Limits.IdleTTL, "idle-ttl", envDuration("IDLE_TTL", d.IdleTTL), "remove a sandbox unused this long")
	fs.DurationVar(&g.Limits.MaxLifetime, "max-lifetime", envDuration("MAX_LIFETIME", d.MaxLifetime), "remove a sandbox this old")
	fs.IntVar(&g.MaxSandboxesPerTenant, "max-sandboxes", int(envFloat("MAX_SANDBOXES", 10)), "live sandboxes one tenant may hold")
	fs.IntVar(&g.ToolCallsPerMinute, "calls-per-minute", int(envFloat("CALLS_PER_MINUTE", 600)), "tool calls one tenant may make per minute")
	categories := fs.String("tools", env("TOOLS", ""), "comma-separated tool categories to enable (files,exec,code,sandbox,audit,browser; default all)")
	enable := fs.String("enable-tools", env("ENABLE_TOOLS", ""), "comma-separated tool names; when set only these are served")
	disable := fs.String("disable-tools", env("DISABLE_TOOLS", ""), "comma-separated tool names to leave out")
	origins := fs.String("allowed-origins", env("ALLOWED_ORIGINS", ""), "comma-separated browser origins allowed besides the gateway's own")
	level := fs.String("log-level", env("LOG_LEVEL", "info"), "debug, info, warn or error")
	fs.StringVar(&c.AuthMode, "auth", env("AUTH", authEmbedded), "authentication: embedded (built-in authorization server), external (tokens from --issuer) or none (loopback only)")
	fs.StringVar(&c.PublicURL, "public-url", env("PUBLIC_URL", ""), "the gateway's origin as clients reach it (default http://ADDR); the MCP resource is PUBLIC_URL/mcp")
	fs.StringVar(&c.Issuer, "issuer", env("ISSUER", ""), "external OIDC issuer URL; turns the embedded authorization server off")
	fs.StringVar(&c.TenantClaim, "tenant-claim", env("TENANT_CLAIM", "sub"), "token claim naming the caller's tenant")
	fs.StringVar(&c.IntrospectionURL, "introspection-url", env("INTROSPECTION_URL", ""), "RFC 7662 endpoint for opaque tokens (external issuers)")
	fs.StringVar(&c.IntrospectionClientID, "introspection-client-id", env("INTROSPECTION_CLIENT_ID", ""), "client id for the introspection endpoint")
	fs.StringVar(&c.IntrospectionSecret, "introspection-client-secret", env("INTROSPECTION_CLIENT_SECRET", ""), "client secret for the introspection endpoint")
	fs.IntVar(&c.HTTP.MaxConnections, "max-connections", int(envFloat("MAX_CONNECTIONS", 4096)), "client connections served at once; more wait for one to close")
	fs.DurationVar(&c.HTTP.ReadHeaderTimeout, "read-header-timeout", envDuration("READ_HEADER_TIMEOUT", 10*time.Second), "close a connection whose request headers take longer than this")
	fs.BoolVar(&c.Dev, "dev", env("DEV", "") == "1", "development mode: create a dev user on first start and accept http://localhost client metadata documents")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q; subcommands: audit verify FILE", fs.Arg(0))
	}
	var err error
	if g.Limits.MemoryBytes, err = parseBytes("memory", *memory); err != nil {
		return c, err
	}
	if g.Limits.WorkspaceBytes, err = parseBytes("workspace-size", *workspace); err != nil {
		return c, err
	}
	if g.Limits.TmpBytes, err = parseBytes("tmp-size", *tmp); err != nil {
		return c, err
	}
	if err := c.LogLevel.UnmarshalText([]byte(*level)); err != nil {
		return c, fmt.Errorf("log-level %q: want debug, info, warn or error", *level)
	}
	g.Images, g.Categories, g.EnabledTools, g.DisabledTools, g.AllowedOrigins = list(*images), list(*categories), list(*enable), list(*disable), list(*origins)
	if c.Issuer != "" {
		if c.AuthMode == authNone {
			return c, errors.New("--issuer and --auth none contradict each other")
		}
		c.AuthMode = authExternal
	}
	if c.AuthMode == authExternal && c.Issuer == "" {
		return c, errors.New("--auth external needs --issuer URL")
	}
	if c.PublicURL == "" {
		c.PublicURL = "http://" + g.Addr
	}
	return c, nil
}

// defaultRunner finds the runner next to the gateway binary (as `make
// build` lays them out), falling back to ./bin/runner.
func defaultRunner() string {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), "runner")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return filepath.Join("bin", "runner")
}

func env(name, def string) string {
	if v, ok := os.LookupEnv("SANDGATE_" + name); ok {
		return v
	}
	return def
}

func envFloat(name string, def float64) float64 {
	if v, err := strconv.ParseFloat(env(name, ""), 64); err == nil {
		return v
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(env(name, "")); err == nil {
		return v
	}
	return def
}

func list(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// parseBytes reads sizes like 512MiB, 1GiB, 100M or plain bytes.
func parseBytes(name, s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}}
	for _, u := range units {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(n), 64)
			if err != nil || v <= 0 {
				break
			}
			return int64(v * float64(u.mult)), nil
		}
	}
	if v, err := strconv.ParseInt(s, 10, 64); err == nil && v > 0 {
		return v, nil
	}
	return 0, fmt.Errorf("%s %q: want a size like 512MiB or 1GiB", name, s)
}
