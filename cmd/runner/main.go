// Command runner is the agent inside every sandbox; it serves the runner
// protocol to the gateway.
//
// Under Docker the gateway mounts this static binary read-only into the
// container and runs it as the entrypoint (behind Docker's init, which
// reaps zombies), on a unix socket (--socket) in a directory only the
// gateway can reach. On Kubernetes an init container copies it from the
// runner image into a volume the sandbox's container shares (`runner
// install DEST`), and it runs from there as PID 1 of the container,
// serving TCP on the pod's IP (--listen) to connections that send the
// sandbox's secret (--secret-file). As PID 1 it is the container's init:
// runner/process reaps every orphan's zombie, and SIGTERM, which the
// kernel delivers to an init only because the runner handles it, stops it
// as under Docker (TestPID1).
//
// `runner connect HOST PORT` is a third use: ssh's and git's proxy command
// inside the sandbox.
package main

import (
	"context"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandgate/sandgate/runner"
	"github.com/sandgate/sandgate/runner/browser"
	"github.com/sandgate/sandgate/runner/cgroup"
	"github.com/sandgate/sandgate/runner/codesearch"
	"github.com/sandgate/sandgate/runner/egress"
	"github.com/sandgate/sandgate/runner/files"
	"github.com/sandgate/sandgate/runner/httpreq"
	"github.com/sandgate/sandgate/runner/interp"
	"github.com/sandgate/sandgate/runner/process"
	"github.com/sandgate/sandgate/runner/proxy"
	"github.com/sandgate/sandgate/runner/watch"
)

func main() {
	// Started as a trampoline for a program that must run as user code
	// (Chromium): that program replaces this process here.
	if err := process.ExecAsUser(); err != nil {
		fmt.Fprintf(os.Stderr, "runner: %v\n", err)
		os.Exit(127)
	}
	args := os.Args[1:]
	sub := ""
	if len(args) > 0 && (args[0] == "connect" || args[0] == "install") {
		sub = args[0]
	} else {
		withTimerSlack() // first: it may execute the runner again
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	name := "runner"
	var err error
	switch sub {
	case "connect":
		name, err = "runner connect", runConnect(ctx, args[1:], os.Stdin, os.Stdout, os.Stderr)
	case "install":
		name, err = "runner install", runInstall(args[1:])
	default:
		err = run(ctx, args)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	cfg, err := parseConfig(args)
	if err != nil {
		return err
	}
	secret, err := readSecret(cfg)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	// Code in the sandbox runs as the runner's uid, so without this it
	// could ptrace the runner (stop it, or forge its answers to the
	// gateway) and read its memory through /proc. A non-dumpable process
	// can be traced only with CAP_SYS_PTRACE, which the sandbox lacks.
	// The flag is not inherited across execve: the commands the runner
	// starts stay ordinary, debuggable processes.
	// Its own /proc files then belong to root: what it writes there
	// later, it opens now.
	process.OpenPeakReset()
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("make the runner non-dumpable (refusing to run traceable by sandbox code): %w", err)
	}

	// Before anything starts: every process of the sandbox inherits them.
	if err := applyRlimits(cfg.Rlimits); err != nil {
		return err
	}
	warmThreads(spareThreads)

	acct, err := cgroup.Open()
	if err != nil {
		// Accounting is a report, not a limit: the container's cgroup
		// still enforces the limits, so the runner carries on without it.
		log.Warn("cgroup accounting unavailable", "error", err)
	}
	// The proxy listens before any user process can start, so nothing
	// in the sandbox can take its port first.
	link := &egress.Link{}
	proxyLn, err := net.Listen("tcp", cfg.ProxyListen)
	if err != nil {
		return fmt.Errorf("listen for the egress proxy on %s: %w", cfg.ProxyListen, err)
	}
	defer proxyLn.Close()
	go func() {
		px := &proxy.Server{Open: link, Log: log}
		if err := px.Serve(ctx, proxyLn); err != nil {
			log.Error("egress proxy stopped", "error", err)
		}
	}()
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the runner's own path: %w", err)
	}
	proxyAddr := proxyLn.Addr().String()
	env := append(process.DefaultEnv(cfg.Workspace), egress.Env(proxyAddr, self)...)
	httpClient := &httpreq.Client{Proxy: proxyAddr}
	var trustCAs []*x509.Certificate
	if cfg.ExtraCA != "" {
		trust, err := egress.LoadTrust(cfg.ExtraCA, os.TempDir())
		if err != nil {
			return err
		}
		env = append(env, trust.Env...)
		httpClient.RootCAs, trustCAs = trust.Pool, trust.CAs
	}

	pm := process.NewManager(process.Options{Workspace: cfg.Workspace, BaseEnv: env, Accounting: acct, Logger: log})
	defer pm.Close()
	svc := runner.Services{
		Files:     files.New(files.Options{Workspace: cfg.Workspace}),
		Processes: pm,
		Info:      runner.Describe(cfg.Workspace, acct, pm),
		Egress:    link,
		HTTP:      httpClient,
		Watch:     watch.New(cfg.Workspace),
		// Structural search runs ast-grep, when the image has it
		// (sandgate/base); without it the strategy says so per call.
		CodeSearch: codesearch.New(codesearch.Options{Workspace: cfg.Workspace}),
	}
	// The stateful interpreter needs python3 in the image; without it its
	// operations stay unsupported and the gateway says so.
	if im, err := interp.New(interp.Options{Workspace: cfg.Workspace, BaseEnv: env, Accounting: acct, Logger: log}); err == nil {
		defer im.Close() // before pm.Close: kills the interpreter and what its cells started
		svc.Interpreter = im
	} else {
		log.Info("stateful interpreter unavailable", "error", err)
	}
	// The browser tools need Chromium in the image (sandgate/browser);
	// without it their operation stays unsupported and the gateway says
	// so. Chromium itself starts on the first browser call.
	if path := browser.Find(); path != "" {
		bm := browser.New(browser.Options{ExecPath: path, Trampoline: self, Workspace: cfg.Workspace, Proxy: proxyAddr, TrustCAs: trustCAs, Logger: log})
		defer bm.Close() // kills Chromium and everything it started
		svc.Browser = bm
	}
	if cfg.AwaitBlocked != "" {
		if err := awaitBlocked(ctx, cfg.AwaitBlocked, blockedWaitLimit, log); err != nil {
			return err
		}
	}
	ln, err := runner.NewGate(func() (net.Listener, error) { return listen(cfg, secret) }, reopenAfter)
	if err != nil {
		return err
	}
	go reopenOnSignal(ctx, ln, log)
	svc.Gate = ln
	srv := runner.NewServer(svc, log)
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, ConnContext: ln.ConnContext}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	// Tests started with port 0 learn the real one from addr.
	log.Info("runner serving", "network", ln.Addr().Network(), "addr", ln.Addr().String(), "pid", os.Getpid(), "uid", os.Getuid())

	select {
	case err := <-errc:
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	return hs.Shutdown(shutdownCtx)
}
