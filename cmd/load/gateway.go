package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/sandgate/sandgate/gateway"
)

// The tenant quotas of the load run. The gateway's defaults (10 live
// sandboxes, 600 calls a minute) would refuse most scenarios, so the run
// raises them explicitly and says so.
const (
	loadMaxSandboxes   = "400"
	loadCallsPerMinute = "100000000"
	browserImage       = "sandgate/browser:latest"
)

// gatewayConfig is what startGateway needs.
type gatewayConfig struct {
	bin, runner, image string
	extraFlags         []string
	tmpDir             string // holds the var directory and the log
	profiling          bool   // serve the profiler on a metrics listener
	stderr             io.Writer
}

// gatewayProcess is the gateway this run started.
type gatewayProcess struct {
	bin         string
	args        []string
	addr        string // host:port of /mcp, loopback
	metricsAddr string // host:port of /debug/pprof; "" when not profiling
	varDir      string
	logPath     string
	instance    string
	cmd         *exec.Cmd
	exited      chan struct{} // closed once the process is reaped
	waitErr     error         // valid after exited is closed
}

func (g *gatewayProcess) baseURL() string { return "http://" + g.addr }
func (g *gatewayProcess) pid() int        { return g.cmd.Process.Pid }

// startGateway starts the gateway and waits until /healthz answers 200.
// When the process started but never became healthy it returns the
// process (stopped) with the error.
func startGateway(ctx context.Context, cfg gatewayConfig) (*gatewayProcess, error) {
	g := &gatewayProcess{bin: cfg.bin, varDir: filepath.Join(cfg.tmpDir, "var"), logPath: filepath.Join(cfg.tmpDir, "gateway.log"),
		instance: "load-" + randomHex(6), exited: make(chan struct{})}
	var err error
	if g.addr, err = chooseAddr(cfg.extraFlags, "addr"); err != nil {
		return nil, err
	}
	g.args = []string{"--addr", g.addr, "--var", g.varDir, "--runner", cfg.runner, "--image", cfg.image,
		"--images", browserImage, "--instance", g.instance,
		"--max-sandboxes", loadMaxSandboxes, "--calls-per-minute", loadCallsPerMinute}
	fmt.Fprintf(cfg.stderr, "load: raising the tenant quotas for this run: --max-sandboxes %s --calls-per-minute %s (gateway defaults: 10 and 600)\n",
		loadMaxSandboxes, loadCallsPerMinute)
	if _, set := flagValue(cfg.extraFlags, "metrics-addr"); cfg.profiling {
		if g.metricsAddr, err = chooseAddr(cfg.extraFlags, "metrics-addr"); err != nil {
			return nil, err
		}
		g.args = append(g.args, "--metrics-addr", g.metricsAddr, "--pprof")
	} else if !set && supportsFlag(cfg.bin, "metrics-addr") {
		// A gateway that has metrics serves them on a fixed default port;
		// moved to a free one so that this run cannot collide with another
		// gateway, and read for the pool's state and the goroutine count
		// (older gateways lack the flag and are left alone).
		if g.metricsAddr, err = chooseAddr(nil, "metrics-addr"); err != nil {
			return nil, err
		}
		g.args = append(g.args, "--metrics-addr", g.metricsAddr)
	}
	g.args = append(g.args, cfg.extraFlags...)

	logFile, err := os.Create(g.logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child has its own descriptor
	g.cmd = exec.Command(cfg.bin, g.args...)
	g.cmd.Stdout, g.cmd.Stderr = logFile, logFile
	g.cmd.SysProcAttr = &syscall.SysProcAttr{
		// Its own process group: a Ctrl-C reaches only this program,
		// which then deletes its sessions before it stops the gateway.
		Setpgid: true,
		// Should this program die without cleaning up, the gateway is
		// told to stop and remove its containers.
		Pdeathsig: syscall.SIGTERM,
	}
	if err := g.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start gateway %s: %w", cfg.bin, err)
	}
	go func() {
		g.waitErr = g.cmd.Wait()
		close(g.exited)
	}()
	fmt.Fprintf(cfg.stderr, "load: gateway pid %d on %s/mcp (instance %s, var %s, log %s)\n", g.pid(), g.baseURL(), g.instance, g.varDir, g.logPath)
	if err := g.waitHealthy(ctx, time.Minute); err != nil {
		g.kill()
		// g is returned so that the caller can keep its log.
		return g, fmt.Errorf("%w; the gateway log ends:\n%s", err, g.logTail(20))
	}
	return g, nil
}

// waitHealthy polls /healthz until it answers 200, the gateway exits, or
// timeout passes.
func (g *gatewayProcess) waitHealthy(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil}}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, g.baseURL()+"/healthz", nil)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-g.exited:
			return fmt.Errorf("gateway exited during start: %v", g.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("gateway not healthy at %s/healthz within %v: %w", g.baseURL(), timeout, context.Cause(ctx))
		case <-tick.C:
		}
	}
}

// addClient registers an OAuth client with every scope, as the operator
// would with `gateway client add`.
func (g *gatewayProcess) addClient(ctx context.Context, name string) (id, secret string, err error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, g.bin, "client", "add", "--var", g.varDir, "--name", name).CombinedOutput()
	if err != nil {
		return "", "", fmt.Errorf("gateway client add: %w: %s", err, bytes.TrimSpace(out))
	}
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			switch strings.TrimSpace(k) {
			case "client_id":
				id = strings.TrimSpace(v)
			case "client_secret":
				secret = strings.TrimSpace(v)
			}
		}
	}
	if id == "" || secret == "" {
		return "", "", fmt.Errorf("gateway client add printed no client_id/client_secret: %s", bytes.TrimSpace(out))
	}
	return id, secret, nil
}

// stop asks the gateway to shut down (it ends its sessions and removes
// its containers) and waits for it, killing it after 90 s.
func (g *gatewayProcess) stop(stderr io.Writer) error {
	select {
	case <-g.exited:
		return fmt.Errorf("gateway exited before the run ended (%v); log %s ends:\n%s", g.waitErr, g.logPath, g.logTail(20))
	default:
	}
	began := time.Now()
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.exited:
	case <-time.After(90 * time.Second):
		g.kill()
		return fmt.Errorf("gateway did not exit within 90s of SIGTERM and was killed; its containers (label sandgate.instance=%s) may remain", g.instance)
	}
	fmt.Fprintf(stderr, "load: gateway stopped in %v\n", time.Since(began).Round(time.Millisecond))
	if g.waitErr != nil {
		return fmt.Errorf("gateway exited with %v after SIGTERM; log %s ends:\n%s", g.waitErr, g.logPath, g.logTail(20))
	}
	return nil
}

func (g *gatewayProcess) kill() {
	_ = g.cmd.Process.Kill()
	select {
	case <-g.exited:
	case <-time.After(5 * time.Second):
	}
}

// removeLeftoverContainers is a safety net: the gateway removes its
// containers on shutdown, so any still labelled with this run's instance
// is a leak worth reporting, and is removed. Only this run's instance is
// looked at, never another gateway's.
func (g *gatewayProcess) removeLeftoverContainers(stderr io.Writer) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", "ps", "-aq", "--filter", "label=sandgate.instance="+g.instance).Output()
	if err != nil {
		fmt.Fprintf(stderr, "load: could not check for leftover containers of instance %s: %v\n", g.instance, err)
		return
	}
	ids := strings.Fields(string(out))
	if len(ids) == 0 {
		return
	}
	fmt.Fprintf(stderr, "load: WARNING: %d containers of instance %s remain after the gateway exited; removing them\n", len(ids), g.instance)
	if out, err := exec.CommandContext(ctx, "docker", append([]string{"rm", "-f", "-v"}, ids...)...).CombinedOutput(); err != nil {
		fmt.Fprintf(stderr, "load: docker rm: %v: %s\n", err, bytes.TrimSpace(out))
	}
}

// keepLog moves the gateway's log out of the temporary directory (which
// is removed) so that a failed run can be looked into.
func (g *gatewayProcess) keepLog(stderr io.Writer) {
	kept := filepath.Join(os.TempDir(), "sandgate-"+g.instance+"-gateway.log")
	if err := os.Rename(g.logPath, kept); err != nil {
		fmt.Fprintf(stderr, "load: could not keep the gateway log %s: %v\n", g.logPath, err)
		return
	}
	g.logPath = kept
	fmt.Fprintf(stderr, "load: the run failed; gateway log kept at %s\n", kept)
}

// logTail returns the last n lines of the gateway's log.
func (g *gatewayProcess) logTail(n int) string {
	data, err := os.ReadFile(g.logPath)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// removeTempDir removes the run's directory, unless something is still
// mounted below it (a workspace the gateway failed to unmount): removing
// through a mount would delete inside it and could not finish anyway.
func removeTempDir(dir string, stderr io.Writer) {
	if mounts := mountsUnder(dir); len(mounts) > 0 {
		fmt.Fprintf(stderr, "load: left %s in place: still mounted below it: %s\n", dir, strings.Join(mounts, ", "))
		return
	}
	if err := os.RemoveAll(dir); err != nil {
		fmt.Fprintf(stderr, "load: could not remove %s: %v\n", dir, err)
	}
}

// mountsUnder lists the mount points at or below dir.
func mountsUnder(dir string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// Field 5 is the mount point (octal-escaped; ours has no spaces).
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && (fields[4] == dir || strings.HasPrefix(fields[4], dir+"/")) {
			out = append(out, fields[4])
		}
	}
	return out
}

// chooseAddr returns the loopback address for the gateway flag name: the
// one --gateway-flag gives (checked by checkGatewayFlags), else a free
// port.
func chooseAddr(extra []string, name string) (string, error) {
	if v, ok := flagValue(extra, name); ok {
		return v, nil
	}
	return freeLoopbackAddr()
}

// freeLoopbackAddr asks the kernel for a free port. Another process could
// take it before the gateway binds it; the gateway would then fail to
// start and say so.
func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// checkGatewayFlags refuses gateway addresses this program would have to
// connect to that are not loopback: it talks to the gateway it starts and
// nothing else.
func checkGatewayFlags(extra []string) error {
	for _, name := range []string{"addr", "metrics-addr"} {
		v, ok := flagValue(extra, name)
		if !ok {
			continue
		}
		if name == "metrics-addr" && v == "" {
			continue // metrics off
		}
		host, _, err := net.SplitHostPort(v)
		if err != nil {
			return fmt.Errorf("--gateway-flag --%s %q: %w", name, v, err)
		}
		if !gateway.IsLoopback(host) {
			return fmt.Errorf("--gateway-flag --%s %s: only a loopback address is allowed (127.0.0.1, ::1, localhost)", name, v)
		}
	}
	return nil
}

// flagValue finds the last value of flag name in args, in any of Go's
// spellings: -name=v, --name=v, -name v, --name v.
func flagValue(args []string, name string) (value string, ok bool) {
	for i := 0; i < len(args); i++ {
		a := strings.TrimPrefix(strings.TrimPrefix(args[i], "-"), "-")
		if a == args[i] {
			continue // not a flag
		}
		if k, v, hasValue := strings.Cut(a, "="); k == name {
			if hasValue {
				value, ok = v, true
			} else if i+1 < len(args) {
				value, ok = args[i+1], true
				i++
			}
		}
	}
	return value, ok
}

// supportsFlag reports whether the binary lists flag name in its usage.
func supportsFlag(bin, name string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, bin, "-h").CombinedOutput() // -h exits non-zero
	return bytes.Contains(out, []byte("-"+name+" "))
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
