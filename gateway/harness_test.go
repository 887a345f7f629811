package gateway_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	dockerapi "github.com/docker/docker/client"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandgate/sandgate/gateway"
	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/sandbox"
	"github.com/sandgate/sandgate/sandbox/docker"
	"github.com/sandgate/sandgate/sandbox/sandboxtest"
)

const testImage = "sandgate/base:latest"

// testGateway is a real gateway on a loopback port, backed by the real
// Docker engine, with its own instance label so parallel tests never
// touch each other's containers.
type testGateway struct {
	URL       string
	Instance  string
	VarDir    string
	AuditPath string
	Provider  *docker.Provider   // nil on the local provider
	Local     *sandboxtest.Local // set instead of Provider by startLocalGateway
	CAFile    string             // the Docker provider's extra CAs (Config.CAFile)
	Runtime   string             // the Docker provider's OCI runtime (Config.Runtime); "" the engine's
	Custom    sandbox.Provider   // when set, used instead of both (the Kubernetes tier)
	gw        *gateway.Server
	srv       *httptest.Server
	store     *audit.FileSink
	closeOnce sync.Once
	ln        net.Listener
	Logs      *lockedBuffer // everything the gateway logged
	// serve, when set, serves the handler instead of httptest's default
	// server (see startProductionGateway).
	serve func(h http.Handler) *httptest.Server
}

// startGateway starts a gateway; mutate adjusts its config.
func startGateway(t testing.TB, mutate func(*gateway.Config)) *testGateway {
	t.Helper()
	return startGatewayWith(t, nil, mutate)
}

// startLocalGateway starts a gateway on the in-process provider
// (sandboxtest.Local): the real runner as a plain subprocess, no Docker,
// so it runs in -short mode. For gateway logic that needs no container.
func startLocalGateway(t testing.TB, mutate func(*gateway.Config)) *testGateway {
	t.Helper()
	return startLocalGatewayWith(t, nil, mutate)
}

// startLocalGatewayWith is startLocalGateway serving on ln.
func startLocalGatewayWith(t testing.TB, ln net.Listener, mutate func(*gateway.Config)) *testGateway {
	t.Helper()
	tg := &testGateway{Instance: "local", VarDir: t.TempDir(), ln: ln, Local: sandboxtest.NewLocal(t)}
	tg.start(t, "", mutate)
	t.Cleanup(func() { tg.Close() })
	return tg
}

// startGatewayWith starts a gateway serving on ln (a fresh loopback port
// when nil): tests that must know the origin before the gateway exists,
// like the OAuth ones, listen first.
func startGatewayWith(t testing.TB, ln net.Listener, mutate func(*gateway.Config)) *testGateway {
	t.Helper()
	return startGatewayCA(t, ln, "", mutate)
}

// startGatewayCA is startGatewayWith whose sandboxes trust the extra
// CAs in caFile (the Docker provider's Config.CAFile).
func startGatewayCA(t testing.TB, ln net.Listener, caFile string, mutate func(*gateway.Config)) *testGateway {
	t.Helper()
	return startDockerGateway(t, &testGateway{ln: ln, CAFile: caFile}, mutate)
}

// startGVisorGateway starts a gateway whose sandboxes run under gVisor
// (runsc, registered by deploy/setup-gvisor.sh), which pauses them with
// their memory.
func startGVisorGateway(t testing.TB, mutate func(*gateway.Config)) *testGateway {
	t.Helper()
	sandboxtest.RequireRuntime(t, "runsc")
	return startDockerGateway(t, &testGateway{Runtime: "runsc"}, mutate)
}

// startDockerGateway starts tg, whose listener, CAs and runtime are set,
// on the Docker provider.
func startDockerGateway(t testing.TB, tg *testGateway, mutate func(*gateway.Config)) *testGateway {
	t.Helper()
	sandboxtest.RequireImage(t, testImage)
	runner := sandboxtest.RunnerBinary(t)
	// A short var dir keeps socket paths under the 108-byte unix limit.
	varDir, err := os.MkdirTemp("", "sg")
	if err != nil {
		t.Fatal(err)
	}
	tg.Instance, tg.VarDir = "t"+randHex(6), varDir
	t.Cleanup(func() { sandboxtest.RemoveDockerInstance(t, tg.Instance, varDir) })
	tg.start(t, runner, mutate)
	t.Cleanup(func() { tg.Close() })
	return tg
}

func (tg *testGateway) start(t testing.TB, runner string, mutate func(*gateway.Config)) {
	t.Helper()
	ctx := t.Context()
	// Everything the gateway logs is kept, at debug level, so tests can
	// check what never may appear in a log (tokens).
	tg.Logs = &lockedBuffer{}
	var out io.Writer = tg.Logs
	if testing.Verbose() {
		out = io.MultiWriter(tg.Logs, os.Stderr)
	}
	log := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg := gateway.Config{Addr: "127.0.0.1:0", VarDir: tg.VarDir, Image: testImage,
		Limits: sandbox.Limits{Pids: 128, CallTimeout: 30 * time.Second}}
	if mutate != nil {
		mutate(&cfg)
	}
	cfg = cfg.WithDefaults()
	tg.AuditPath = cfg.AuditPath()
	var err error
	if tg.store, err = audit.OpenFile(tg.AuditPath); err != nil {
		t.Fatal(err)
	}
	var provider sandbox.Provider = tg.Local
	if tg.Custom != nil {
		provider = tg.Custom
	} else if tg.Local == nil {
		tg.Provider, err = docker.New(ctx, docker.Config{RunnerPath: runner, SocketDir: cfg.SocketDir(), Image: cfg.Image, Instance: tg.Instance, CAFile: tg.CAFile, Runtime: tg.Runtime}, log)
		if err != nil {
			t.Fatal(err)
		}
		provider = tg.Provider
	}
	if tg.gw, err = gateway.New(ctx, cfg, provider, tg.store, log); err != nil {
		t.Fatal(err)
	}
	switch {
	case tg.serve != nil:
		tg.srv = tg.serve(tg.gw.Handler())
	case tg.ln != nil:
		tg.srv = &httptest.Server{Listener: tg.ln, Config: &http.Server{Handler: tg.gw.Handler()}}
		tg.srv.Start()
	default:
		tg.srv = httptest.NewServer(tg.gw.Handler())
	}
	tg.URL = tg.srv.URL + "/mcp"
}

// Close shuts the gateway down the graceful way.
func (tg *testGateway) Close() {
	tg.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		tg.srv.Close()
		tg.gw.Close(ctx)
		tg.store.Close()
		if tg.Provider != nil {
			tg.Provider.Close()
		}
	})
}

// crash abandons the gateway without any cleanup, as SIGKILL would: its
// containers stay behind.
func (tg *testGateway) crash() {
	tg.closeOnce.Do(func() {
		tg.srv.CloseClientConnections()
		tg.srv.Close()
		tg.gw.DropConnections()
		tg.store.Close()
		if tg.Provider != nil {
			tg.Provider.Close() // the process is gone, and with it the instance lock
		}
	})
}

// listed is what tg's provider lists of its sandboxes, states included
// (paused ones are stopped containers to the engine).
func (tg *testGateway) listed(t testing.TB) []sandbox.Info {
	t.Helper()
	infos, err := tg.Provider.List(t.Context(), sandbox.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	return infos
}

// containers lists this test gateway's containers, in any state, from
// the engine itself (not through the gateway's provider, which a crashed
// gateway has closed).
func (tg *testGateway) containers(t testing.TB) []sandbox.Info {
	t.Helper()
	cli, err := dockerapi.NewClientWithOpts(dockerapi.FromEnv, dockerapi.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	cs, err := cli.ContainerList(t.Context(), container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", docker.LabelInstance+"="+tg.Instance))})
	if err != nil {
		t.Fatal(err)
	}
	infos := make([]sandbox.Info, len(cs))
	for i, c := range cs {
		infos[i] = sandbox.Info{ID: c.Labels[docker.LabelSandbox], ContainerID: c.ID, Session: c.Labels[docker.LabelSession], State: c.State}
	}
	return infos
}

// legacyClient connects a 2025-11-25 client (one sandbox per Mcp-Session-Id).
func legacyClient(t testing.TB, url string) *client.Client {
	t.Helper()
	return connect(t, url, client.WithProtocolVersion("2025-11-25"))
}

// modernClient connects a sessionless 2026-07-28 client.
func modernClient(t testing.TB, url string) *client.Client {
	t.Helper()
	return connect(t, url)
}

func connect(t testing.TB, url string, opts ...client.ClientOption) *client.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url)
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, opts...)
	ctx := t.Context()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "sandgate-test", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// call invokes a tool and fails the test on a protocol error.
func call(t testing.TB, c *client.Client, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := callErr(t.Context(), c, tool, args)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res
}

func callErr(ctx context.Context, c *client.Client, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	return c.CallTool(ctx, req)
}

// mustOK fails unless res is a success, and returns it.
func mustOK(t testing.TB, tool string, res *mcp.CallToolResult) *mcp.CallToolResult {
	t.Helper()
	if res.IsError {
		t.Fatalf("%s: unexpected isError: %s", tool, text(res))
	}
	return res
}

func text(res *mcp.CallToolResult) string {
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			return tc.Text
		}
	}
	return ""
}

// allText is every text block of res joined by newlines: the payload,
// then the notes the gateway adds after it (which sandbox answered, that
// it was replaced).
func allText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// structuredAs decodes a result's structuredContent into T.
func structuredAs[T any](t testing.TB, res *mcp.CallToolResult) T {
	t.Helper()
	var v T
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decode structuredContent %s: %v", b, err)
	}
	return v
}

// execResult mirrors run_shell's structuredContent as documented.
type execResult struct {
	ExitCode        int    `json:"exit_code"`
	Signal          string `json:"signal"`
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	StdoutTruncated bool   `json:"stdout_truncated"`
	StderrTruncated bool   `json:"stderr_truncated"`
	TimedOut        bool   `json:"timed_out"`
	OOMKilled       bool   `json:"oom_killed"`
	DurationMs      int64  `json:"duration_ms"`
	CPUMs           int64  `json:"cpu_ms"`
	MemoryPeakBytes int64  `json:"memory_peak_bytes"`
	Message         string `json:"message"`
	ProcessID       string `json:"process_id"`
}

func shell(t testing.TB, c *client.Client, command string, extra map[string]any) (execResult, *mcp.CallToolResult) {
	t.Helper()
	args := map[string]any{"command": command}
	for k, v := range extra {
		args[k] = v
	}
	res := call(t, c, "run_shell", args)
	return structuredAs[execResult](t, res), res
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// auditRecords reads every record of the audit log.
func auditRecords(t testing.TB, path string) []audit.Event {
	t.Helper()
	events, err := audit.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return events
}

// restart starts a new gateway on the same var dir and instance as old,
// as a restarted process would; mutate, if given, configures it.
func restart(t testing.TB, old *testGateway, mutate ...func(*gateway.Config)) *testGateway {
	t.Helper()
	tg := &testGateway{Instance: old.Instance, VarDir: old.VarDir, Local: old.Local, Runtime: old.Runtime} // a Local outlives its gateway
	var m func(*gateway.Config)
	if len(mutate) > 0 {
		m = mutate[0]
	}
	tg.start(t, sandboxtest.RunnerBinary(t), m)
	t.Cleanup(func() { tg.Close() })
	return tg
}

// Metrics is the gateway's /metrics handler.
func (tg *testGateway) Metrics() http.Handler { return tg.gw.MetricsHandler() }
