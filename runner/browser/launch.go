package browser

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"

	"github.com/sandgate/sandgate/runner/process"
)

// binaries are where images keep Chromium, best first. Debian's
// /usr/bin/chromium and /usr/bin/chromium-headless-shell are shell
// wrappers (the latter without exec, so the browser would not be the
// runner's child and Pdeathsig would miss it); the binaries they run are
// used when present.
var binaries = []string{
	"/usr/lib/chromium/chromium-headless-shell",
	"/usr/lib/chromium/chromium",
	"/usr/bin/chromium-headless-shell",
	"/usr/bin/chromium",
	"/usr/bin/chromium-browser",
	"/usr/bin/google-chrome",
	"/headless-shell/headless-shell",
}

// Find returns the image's Chromium binary, or "" when it has none.
func Find() string {
	for _, p := range binaries {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// startTimeout bounds a launch, whatever the action's own timeout.
const startTimeout = 30 * time.Second

// flags are Chromium's command line besides chromedp's defaults (headless,
// no first run, no background networking, no breakpad, /tmp instead of
// /dev/shm, ...). --no-sandbox: Chromium's own sandbox needs user
// namespaces or a setuid helper, which the container denies; the container
// is the boundary (see the README).
var flags = []chromedp.ExecAllocatorOption{
	chromedp.NoSandbox,
	chromedp.DisableGPU,
	chromedp.Flag("disable-component-update", true),
	chromedp.Flag("disable-crash-reporter", true),
	chromedp.Flag("disable-sync", true),
	chromedp.Flag("no-first-run", true),
	chromedp.Flag("mute-audio", true),
	chromedp.Flag("hide-scrollbars", true),
	chromedp.Flag("window-size", "1280,800"),
	// BackForwardCache: a page restored from it fires no load event, so
	// back would wait for one in vain.
	chromedp.Flag("disable-features", "Translate,BlinkGenPropertyTrees,BackForwardCache,MediaRouter,OptimizationHints,DialMediaRouteProvider"),
}

// start launches Chromium. The launch is bounded by ctx and startTimeout,
// but the browser outlives ctx: its life is bound to the instance.
func start(ctx context.Context, opts Options, log *slog.Logger) (*instance, error) {
	home, err := os.MkdirTemp(opts.TempDir, "sandgate-browser-")
	if err != nil {
		return nil, failf("create the browser's home directory: %v", err)
	}
	o := append(chromedp.DefaultExecAllocatorOptions[:], flags...)
	if opts.Proxy != "" {
		// Every scheme goes through the sandbox's proxy, except loopback,
		// which Chromium never proxies: pages served inside the sandbox
		// still load directly.
		o = append(o, chromedp.ProxyServer("http://"+opts.Proxy))
	}
	if len(opts.TrustCAs) > 0 {
		o = append(o, chromedp.Flag("ignore-certificate-errors-spki-list", spkiList(opts.TrustCAs)))
		if err := trustInNSS(ctx, home, opts.TrustCAs); err != nil {
			log.Warn("browser: the extra CAs are trusted only where a server sends them in its chain", "error", err)
		}
	}
	// The sandbox's HOME is the workspace; the browser's caches and
	// settings must not land there.
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"), "DBUS_SESSION_BUS_ADDRESS=disabled:"}
	execPath := opts.ExecPath
	if opts.Trampoline != "" {
		execPath, env = opts.Trampoline, append(env, process.AsUserEnviron(opts.ExecPath)...)
	}
	o = append(o,
		chromedp.ExecPath(execPath),
		chromedp.Env(env...),
		chromedp.ModifyCmdFunc(func(cmd *exec.Cmd) {
			// Pdeathsig: the browser dies with the runner. No Setsid or
			// Setpgid: see the package comment.
			cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		}),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), o...)
	logf := func(format string, args ...any) { log.Debug("chromedp: " + fmt.Sprintf(format, args...)) }
	root, cancelRoot := chromedp.NewContext(allocCtx, chromedp.WithErrorf(logf), chromedp.WithLogf(logf),
		chromedp.WithBrowserOption(chromedp.WithBrowserErrorf(logf), chromedp.WithBrowserLogf(logf)))
	in := &instance{home: home, log: log, cancelAlloc: cancelAlloc, root: root, cancelRoot: cancelRoot}

	// The first Run binds the browser's life to the context it is given,
	// so it gets root and runs apart from ctx, which only bounds the wait.
	ready := make(chan error, 1)
	go func() {
		_, err := chromedp.Run(root, chromedp.Func(func(context.Context, *chromedp.Target) error { return nil }))
		ready <- err
	}()
	wait, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	select {
	case err = <-ready:
	case <-wait.Done():
		err = wait.Err()
	}
	if err == nil {
		err = in.init(wait)
	}
	if err != nil {
		in.stop()
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, failf("start Chromium (%s): it did not come up within the time allowed", opts.ExecPath)
		}
		return nil, failf("start Chromium (%s): %v", opts.ExecPath, err)
	}
	return in, nil
}

// init records the browser's process and user agent and adopts its first
// tab.
func (in *instance) init(ctx context.Context) error {
	c := chromedp.FromContext(in.root)
	in.pid = c.Browser.Process().Pid
	in.exited = exitedChan(c)
	bctx, cancel := bound(in.root, ctx)
	defer cancel()
	v, err := chromedp.CallBrowser(bctx, cdpbrowser.GetVersion, cdp.Empty{})
	if err != nil {
		return err
	}
	in.userAgent = v.UserAgent
	first := &tab{id: c.Target.TargetID, ctx: in.root}
	in.tabs = []*tab{first}
	return nil
}

// exitedChan returns a channel closed when the browser's connection is
// gone, which is how chromedp sees the process die.
func exitedChan(c *chromedp.Context) <-chan struct{} {
	return c.Browser.LostConnection
}

// alive reports whether the browser still runs and answers.
func (in *instance) alive(ctx context.Context) bool {
	if in.dead() {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	bctx, cancel2 := bound(in.root, ctx)
	defer cancel2()
	_, err := chromedp.CallBrowser(bctx, cdpbrowser.GetVersion, cdp.Empty{})
	if err != nil && ctx.Err() == nil && !in.dead() {
		in.log.Warn("browser does not answer", "pid", in.pid, "error", err)
		in.deathNote.CompareAndSwap(nil, ptr("it stopped answering"))
	}
	return err == nil
}

// dead reports whether the browser's process or connection is gone.
func (in *instance) dead() bool {
	if in.root.Err() != nil {
		return true
	}
	select {
	case <-in.exited:
		return true
	default:
	}
	return syscall.Kill(in.pid, 0) != nil || isZombie(in.pid)
}

// exitReason says, as well as is known, how the browser ended.
func (in *instance) exitReason() string {
	if n := in.deathNote.Load(); n != nil {
		return fmt.Sprintf("process %d: %s", in.pid, *n)
	}
	return fmt.Sprintf("process %d ended", in.pid)
}

// stop kills the browser and everything it started and removes its
// directories. chromedp kills the process, waits for it, kills leftover
// children by their --user-data-dir and removes that directory.
func (in *instance) stop() {
	in.stopOnce.Do(func() {
		in.cancelRoot()
		in.cancelAlloc()
		if err := os.RemoveAll(in.home); err != nil {
			in.log.Warn("remove browser home", "path", in.home, "error", err)
		}
	})
}

func isZombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the last ')' (the command may contain parentheses).
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == ')' {
			return i+2 < len(b) && b[i+2] == 'Z'
		}
	}
	return false
}

func ptr[T any](v T) *T { return &v }
