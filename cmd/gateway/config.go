package main

import (
	"crypto/x509"
	"encoding/pem"
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
	"github.com/sandgate/sandgate/gateway/egress"
	"github.com/sandgate/sandgate/sandbox"
	"github.com/sandgate/sandgate/sandbox/kubernetes"
	"github.com/sandgate/sandgate/sandbox/workspace"
)

// config is the gateway binary's whole configuration: the gateway's own
// plus what only main needs.
type config struct {
	Gateway    gateway.Config
	HTTP       gateway.HTTPOptions
	RunnerPath string
	Instance   string
	Provider   string // docker or kubernetes
	Kube       kubeConfig
	Runtime    string // OCI runtime for sandboxes, e.g. runsc; empty: the engine's default
	// SandboxCA is a PEM file of CAs every sandbox trusts besides its
	// image's (absolute once parsed); empty: none.
	SandboxCA string
	// WorkspaceBackend is how sandbox workspaces are stored (see
	// sandbox/workspace).
	WorkspaceBackend workspace.Backend
	LogLevel         slog.Level
	MetricsAddr      string // where /metrics is served; "" turns it off
	Pprof            bool   // serve /debug/pprof beside /metrics

	AuthMode              string // embedded, external or none
	PublicURL             string // the gateway's origin as clients see it
	Issuer                string // external issuer (implies AuthMode external)
	TenantClaim           string
	IntrospectionURL      string
	IntrospectionClientID string
	IntrospectionSecret   string
	Dev                   bool // dev user on first start; http://localhost client metadata documents

	E2BTemplates     string // --e2b-templates: ID=IMAGE,... added to the defaults
	E2BAccessKeyFile string // --e2b-access-key-file
}

// parseConfig reads flags, each with an environment fallback applied
// through the same parser (see applyEnv).
func parseConfig(args []string, stderr io.Writer) (config, error) {
	var c config
	g := &c.Gateway
	d := sandbox.DefaultLimits
	memory, wsSize, tmp := byteSize(d.MemoryBytes), byteSize(d.WorkspaceBytes), byteSize(d.TmpBytes)
	pausedBytes, snapshotBytes := byteSize(gateway.DefaultMaxPausedBytesPerTenant), byteSize(gateway.DefaultMaxSnapshotBytesPerTenant)
	var images, categories, enable, disable, origins, level string
	var egressAllow, egressPolicy, pools string
	var poolSize int
	el := egress.DefaultLimits
	egressBytes := byteSize(el.BytesPerMinute)
	backend := backendFlag(workspace.Auto)
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&g.Addr, "addr", "127.0.0.1:8080", "listen address (loopback only until authentication is configured)")
	fs.StringVar(&g.VarDir, "var", "var", "directory for the audit log, sandbox sockets and workspaces")
	fs.StringVar(&g.Image, "image", "sandgate/base:latest", "default sandbox image")
	fs.StringVar(&images, "images", "", "comma-separated extra images sandbox_create may ask for")
	fs.IntVar(&poolSize, "pool-size", gateway.DefaultPoolSize, fmt.Sprintf("started sandboxes of the default image kept ready for new sessions (the warm pool; %d per replica with --provider kubernetes); 0: none", gateway.DefaultReplicaPoolSize))
	fs.StringVar(&pools, "pool", "", "warm pools of other images, as IMAGE=N,... (each image also in --images)")
	fs.StringVar(&c.RunnerPath, "runner", defaultRunner(), "path of the static runner binary to inject into sandboxes")
	fs.StringVar(&c.Runtime, "runtime", "", "OCI runtime for sandboxes (e.g. runsc for gVisor, kata-runtime); default: the engine's")
	fs.StringVar(&c.Provider, "provider", providerDocker, "where sandboxes run: docker (this host's engine) or kubernetes (a pod each)")
	fs.StringVar(&c.Kube.Kubeconfig, "kubeconfig", "", "kubeconfig file for --provider kubernetes (default: the pod's service account in a cluster, else $KUBECONFIG)")
	fs.StringVar(&c.Kube.Namespace, "k8s-namespace", "", "namespace of the sandbox pods (default: the gateway pod's own)")
	fs.StringVar(&c.Kube.GatewayNamespace, "k8s-gateway-namespace", "", "namespace of the gateway pods, which the sandboxes' NetworkPolicy admits to the runners (default: the gateway pod's own)")
	fs.StringVar(&c.Kube.RuntimeClass, "k8s-runtime-class", "", "RuntimeClass of the sandbox pods, e.g. gvisor (runsc) or kata; default: the cluster's")
	fs.StringVar(&c.Kube.WorkspaceClass, "k8s-workspace-class", "", "StorageClass of each sandbox's /workspace claim, which outlives its pods and must enforce its size (ENOSPC); default: the cluster's default class; "+kubernetes.WorkspaceEmptyDir+": a pod-local emptyDir, lost with the pod")
	fs.StringVar(&c.Kube.RunnerImage, "k8s-runner-image", kubernetes.DefaultRunnerImage, "image the runner is copied from into each sandbox pod (make images builds it)")
	fs.StringVar(&c.Kube.KeyFile, "k8s-key-file", "", "key the per-sandbox runner secrets are derived from; replicas share it (default VAR/runner.key, made on first start)")
	fs.StringVar(&c.Kube.CPURequest, "k8s-cpu-request", "", "CPU request of each sandbox pod (default 25m); with the node's cores it sets how many sandboxes a node takes")
	fs.StringVar(&c.Kube.MemoryRequest, "k8s-memory-request", "", "memory request of each sandbox pod (default 64Mi)")
	fs.StringVar(&c.Kube.PullPolicy, "k8s-pull-policy", "", "imagePullPolicy of the sandbox and runner images: Always, IfNotPresent (default) or Never")
	fs.StringVar(&c.Instance, "instance", "default", "name scoping this gateway's sandboxes: with docker one live gateway per instance and engine; with kubernetes the replicas of one deployment share it")
	fs.Float64Var(&g.Limits.CPUs, "cpus", d.CPUs, "CPU cores per sandbox")
	fs.Var(&memory, "memory", "memory per sandbox (also the memory+swap limit), e.g. 512MiB")
	fs.Int64Var(&g.Limits.Pids, "pids", d.Pids, "max processes/threads per sandbox")
	fs.Var(&wsSize, "workspace-size", "size of each sandbox's /workspace file system on disk, e.g. 4GiB")
	fs.Var(&backend, "workspace-backend", "how workspaces are stored: auto (disk where the host can loop-mount, else tmpfs), loop or tmpfs")
	fs.Var(&tmp, "tmp-size", "size of each sandbox's /tmp (tmpfs, counted against --memory), e.g. 256MiB")
	fs.DurationVar(&g.Limits.CallTimeout, "call-timeout", d.CallTimeout, "default and maximum wall clock per tool call")
	fs.DurationVar(&g.Limits.IdleTTL, "idle-ttl", d.IdleTTL, "pause (see --on-idle) a sandbox unused this long")
	fs.DurationVar(&g.Limits.MaxLifetime, "max-lifetime", d.MaxLifetime, "pause (see --on-idle) a sandbox that has run this long since its creation or its last resume")
	fs.IntVar(&g.MaxSandboxesPerTenant, "max-sandboxes", 10, "live (running) sandboxes one tenant may hold")
	fs.StringVar(&g.OnIdle, "on-idle", "pause", "what happens to a sandbox idle for --idle-ttl or older than --max-lifetime: pause (files kept; the next call resumes it) or destroy")
	fs.DurationVar(&g.PausedRetention, "paused-retention", gateway.DefaultPausedRetention, "destroy a sandbox paused this long")
	fs.IntVar(&g.MaxPausedPerTenant, "max-paused", gateway.DefaultMaxPausedPerTenant, "paused sandboxes one tenant may keep")
	fs.Var(&pausedBytes, "max-paused-bytes", "disk the paused sandboxes of one tenant may take, e.g. 20GiB")
	fs.IntVar(&g.MaxSnapshotsPerTenant, "max-snapshots", gateway.DefaultMaxSnapshotsPerTenant, "snapshots one tenant may keep")
	fs.Var(&snapshotBytes, "max-snapshot-bytes", "disk the snapshots of one tenant may take, e.g. 20GiB")
	fs.IntVar(&g.ToolCallsPerMinute, "calls-per-minute", 600, "tool calls one tenant may make per minute")
	fs.StringVar(&categories, "tools", "", "comma-separated tool categories to enable (files,exec,code,sandbox,audit,browser,network,custom; default all)")
	fs.StringVar(&enable, "enable-tools", "", "comma-separated tool names; when set only these are served")
	fs.StringVar(&disable, "disable-tools", "", "comma-separated tool names to leave out")
	fs.StringVar(&g.ToolsDir, "tools-dir", "", "directory of custom tool manifests (*.json), watched while the gateway runs; check one with `gateway tools check DIR`")
	fs.StringVar(&origins, "allowed-origins", "", "comma-separated browser origins allowed besides the gateway's own")
	fs.StringVar(&c.SandboxCA, "sandbox-ca", "", "PEM file of certificate authorities sandboxes trust besides their image's (a private registry's, a TLS-inspecting proxy's)")
	fs.StringVar(&egressAllow, "egress-allow", "", "comma-separated destinations every tenant's sandboxes may reach through the egress proxy (host, *.suffix, CIDR, each with optional :port); default none")
	fs.StringVar(&egressPolicy, "egress-policy", "", "JSON file of per-tenant egress ceilings and sandbox defaults (see docs/egress.md); its \"default\" replaces --egress-allow")
	fs.IntVar(&g.Egress.Limits.MaxConns, "egress-max-conns", el.MaxConns, "open egress connections per sandbox")
	fs.IntVar(&g.Egress.Limits.ConnsPerMinute, "egress-conns-per-minute", el.ConnsPerMinute, "new egress connections per sandbox per minute")
	fs.Var(&egressBytes, "egress-bytes-per-minute", "egress bytes (both directions) per sandbox per minute, e.g. 4GiB")
	fs.DurationVar(&g.Egress.Limits.IdleTimeout, "egress-idle-timeout", el.IdleTimeout, "close an egress connection idle this long")
	fs.StringVar(&level, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&c.AuthMode, "auth", authEmbedded, "authentication: embedded (built-in authorization server), external (tokens from --issuer) or none (loopback only)")
	fs.StringVar(&c.PublicURL, "public-url", "", "the gateway's origin as clients reach it (default http://ADDR); the MCP resource is PUBLIC_URL/mcp")
	fs.StringVar(&c.Issuer, "issuer", "", "external OIDC issuer URL; turns the embedded authorization server off")
	fs.StringVar(&c.TenantClaim, "tenant-claim", "sub", "token claim naming the caller's tenant")
	fs.StringVar(&c.IntrospectionURL, "introspection-url", "", "RFC 7662 endpoint for opaque tokens (external issuers)")
	fs.StringVar(&c.IntrospectionClientID, "introspection-client-id", "", "client id for the introspection endpoint")
	fs.StringVar(&c.IntrospectionSecret, "introspection-client-secret", "", "client secret for the introspection endpoint")
	fs.IntVar(&c.HTTP.MaxConnections, "max-connections", 4096, "client connections served at once; more wait for one to close")
	fs.DurationVar(&c.HTTP.ReadHeaderTimeout, "read-header-timeout", 10*time.Second, "close a connection whose request headers take longer than this")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", "127.0.0.1:9464", "serve Prometheus /metrics on this address, apart from the MCP one (empty: off)")
	fs.BoolVar(&c.Pprof, "pprof", false, "also serve the Go profiler at /debug/pprof on --metrics-addr (loopback only)")
	e2bOn := fs.Bool("e2b", true, "serve the E2B-compatible API (/v2/sandboxes, the envd services, /files, /execute) beside MCP; keys come from `gateway apikey add`")
	fs.StringVar(&c.E2BTemplates, "e2b-templates", "", "E2B template ids and the allowed images they start, as ID=IMAGE,... (added to base and code-interpreter-v1, which start --image)")
	fs.StringVar(&c.E2BAccessKeyFile, "e2b-access-key-file", "", "key that signs sandbox access tokens of the E2B API; replicas share it (default VAR/access.key, made on first start; with --provider kubernetes derived from the runner key)")
	fs.BoolVar(&c.Dev, "dev", false, "development mode: create a dev user on first start and accept http://localhost client metadata documents")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: gateway [flags]\n\nEvery flag can also be set as %s<NAME> (dashes as underscores); a flag on the command line wins.\n\n", envPrefix)
		fs.PrintDefaults()
	}
	var err error
	if err = fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q; subcommands: audit verify FILE, healthcheck, tools check DIR, client add, keys rotate, user add", fs.Arg(0))
	}
	if err := applyEnv(fs); err != nil {
		return c, err
	}
	g.Limits.MemoryBytes, g.Limits.WorkspaceBytes, g.Limits.TmpBytes = int64(memory), int64(wsSize), int64(tmp)
	g.MaxPausedBytesPerTenant, g.MaxSnapshotBytesPerTenant = int64(pausedBytes), int64(snapshotBytes)
	c.WorkspaceBackend = workspace.Backend(backend)
	g.Egress.Limits.BytesPerMinute = int64(egressBytes)
	if err := c.Kube.check(); err != nil {
		return c, err
	}
	if c.SandboxCA, err = checkCAFile(c.SandboxCA); err != nil {
		return c, err
	}
	if g.Egress.Policy, err = egressTenants(egressAllow, egressPolicy); err != nil {
		return c, err
	}
	if err := c.LogLevel.UnmarshalText([]byte(level)); err != nil {
		return c, fmt.Errorf("log-level %q: want debug, info, warn or error", level)
	}
	g.E2B.Disabled = !*e2bOn
	g.Images, g.Categories, g.EnabledTools, g.DisabledTools, g.AllowedOrigins = list(images), list(categories), list(enable), list(disable), list(origins)
	if c.Provider == providerKubernetes {
		// Gateways of one Kubernetes instance are replicas: they share
		// the cluster's sandboxes and nothing else.
		g.Replicated = true
		if !isSet(fs, "pool-size") {
			poolSize = gateway.DefaultReplicaPoolSize
		}
	}
	if g.Pool, err = poolSizes(g.Image, poolSize, pools); err != nil {
		return c, err
	}
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

func list(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// egressTenants builds the egress policy from --egress-allow and
// --egress-policy.
func egressTenants(allow, file string) (egress.Tenants, error) {
	var t egress.Tenants
	if file != "" {
		var err error
		if t, err = egress.LoadTenants(file); err != nil {
			return t, fmt.Errorf("--egress-policy: %w", err)
		}
	}
	if allow != "" && len(t.Deployment.Ceiling) == 0 {
		p, err := egress.NewTenantPolicy(list(allow), nil)
		if err != nil {
			return t, fmt.Errorf("--egress-allow: %w", err)
		}
		t.Deployment = p
	}
	return t, nil
}

// checkCAFile makes path absolute (it is mounted into sandboxes) and
// checks that it holds at least one PEM certificate.
func checkCAFile(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("--sandbox-ca: %w", err)
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return "", fmt.Errorf("--sandbox-ca: %w", err)
	}
	for {
		var block *pem.Block
		if block, data = pem.Decode(data); block == nil {
			return "", fmt.Errorf("--sandbox-ca %s: no PEM certificate in the file", abs)
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return "", fmt.Errorf("--sandbox-ca %s: %w", abs, err)
		}
		return abs, nil
	}
}

// poolSizes builds the warm pool sizes from --pool-size (the default
// image's) and --pool (IMAGE=N,...).
func poolSizes(image string, size int, others string) (map[string]int, error) {
	pools := map[string]int{}
	if size != 0 {
		pools[image] = size
	}
	for _, item := range list(others) {
		name, n, ok := strings.Cut(item, "=")
		count, err := strconv.Atoi(n)
		if !ok || name == "" || err != nil {
			return nil, fmt.Errorf("--pool %q: want IMAGE=N, e.g. sandgate/browser:latest=4", item)
		}
		pools[name] = count
	}
	return pools, nil
}

// isSet reports whether flag name was given, on the command line or
// through its environment variable.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
