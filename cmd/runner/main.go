// Command runner is the agent inside every sandbox. The gateway mounts this
// static binary read-only into the container and runs it as the entrypoint
// (behind Docker's init, which reaps zombies); it serves the runner protocol
// on a unix socket in a directory only the gateway can reach.
package main

import (
	"context"
	"errors"
	"flag"
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
	"github.com/sandgate/sandgate/runner/egress"
	"github.com/sandgate/sandgate/runner/files"
	"github.com/sandgate/sandgate/runner/httpreq"
	"github.com/sandgate/sandgate/runner/interp"
	"github.com/sandgate/sandgate/runner/process"
	"github.com/sandgate/sandgate/runner/proxy"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "connect" {
		if err := runConnect(ctx, args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "runner connect:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(ctx, args); err != nil {
		fmt.Fprintln(os.Stderr, "runner:", err)
		os.Exit(1)
	}
}

// config is the runner's whole configuration.
type config struct {
	Socket    string
	Workspace string
	// ProxyListen is where the sandbox's egress proxy listens. Inside a
	// container it is the fixed, documented 127.0.0.1:3128; tests that
	// run the runner on the host pass port 0.
	ProxyListen string
	// ExtraCA is a PEM file of CAs the sandbox trusts besides the
	// image's (mounted read-only by the provider); empty: none.
	ExtraCA string
}

func (c config) Validate() error {
	if c.Socket == "" {
		return errors.New("--socket is required")
	}
	if c.Workspace == "" {
		return errors.New("--workspace must not be empty")
	}
	return nil
}

func parseConfig(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("runner", flag.ContinueOnError)
	// Flags only, no environment: the runner's environment is the
	// sandbox's, which its code controls, and the gateway passes both.
	fs.StringVar(&c.Socket, "socket", "", "unix socket to serve the runner protocol on")
	fs.StringVar(&c.Workspace, "workspace", "/workspace", "default working directory and base for relative paths")
	fs.StringVar(&c.ProxyListen, "proxy-listen", "127.0.0.1:3128", "address of the egress proxy the sandbox's programs use")
	fs.StringVar(&c.ExtraCA, "extra-ca", "", "PEM file of certificate authorities to trust besides the image's")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	return c, c.Validate()
}

func run(ctx context.Context, args []string) error {
	cfg, err := parseConfig(args)
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
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("make the runner non-dumpable (refusing to run traceable by sandbox code): %w", err)
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
	var trustSPKI []string
	if cfg.ExtraCA != "" {
		trust, err := egress.LoadTrust(cfg.ExtraCA, os.TempDir())
		if err != nil {
			return err
		}
		env = append(env, trust.Env...)
		httpClient.RootCAs, trustSPKI = trust.Pool, trust.SPKI
	}

	pm := process.NewManager(process.Options{Workspace: cfg.Workspace, BaseEnv: env, Accounting: acct, Logger: log})
	defer pm.Close()
	svc := runner.Services{
		Files:     files.New(files.Options{Workspace: cfg.Workspace}),
		Processes: pm,
		Info:      runner.Describe(cfg.Workspace, acct, pm),
		Egress:    link,
		HTTP:      httpClient,
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
		bm := browser.New(browser.Options{ExecPath: path, Workspace: cfg.Workspace, Proxy: proxyAddr, TrustSPKI: trustSPKI, Logger: log})
		defer bm.Close() // kills Chromium and everything it started
		svc.Browser = bm
	}
	srv := runner.NewServer(svc, log)

	ln, err := listen(cfg.Socket)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	log.Info("runner serving", "socket", cfg.Socket, "pid", os.Getpid(), "uid", os.Getuid())

	select {
	case err := <-errc:
		return fmt.Errorf("serve %s: %w", cfg.Socket, err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	return hs.Shutdown(shutdownCtx)
}

// listen opens the unix socket, replacing a stale one from an earlier run.
// The socket is world-connectable because its directory is the access
// control: the gateway creates it 0700 (or inside a 0700 parent) and mounts
// it into this sandbox only.
func listen(path string) (net.Listener, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale socket %s: %w", path, err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		ln.Close()
		return nil, fmt.Errorf("chmod %s: %w", path, err)
	}
	return ln, nil
}
