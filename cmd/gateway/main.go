// Command gateway is the Sandgate MCP gateway.
//
//	gateway [flags]                 serve MCP at http://ADDR/mcp
//	gateway audit verify FILE       check an audit log's hash chain
//	gateway apikey add|list|revoke  manage API keys of the E2B-compatible API
//	gateway client add|list|revoke  manage OAuth clients of the embedded authorization server
//	gateway healthcheck             exit 0 when a local gateway is healthy
//	gateway tools check DIR         check a directory of custom tool manifests
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/sandgate/sandgate/gateway"
	"github.com/sandgate/sandgate/gateway/audit"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "audit":
			return runAudit(args[1:], stdout)
		case "apikey":
			return runAPIKey(args[1:], stdout)
		case "healthcheck":
			return runHealthcheck(ctx, args[1:], stdout)
		case "tools":
			return runTools(args[1:], stdout)
		case "client", "keys", "user":
			return runAdmin(args, os.Stdin, stdout)
		}
	}
	cfg, err := parseConfig(args, stderr)
	if err != nil {
		return err
	}
	return serve(ctx, cfg, stderr, slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel})))
}

// gcPercent is the serving gateway's GOGC unless the environment sets
// one. Its live heap is small (tens of MiB with hundreds of sandboxes)
// and churned by every call, so at Go's default of 100 the collector
// takes a large share of its CPU under load; at 400, read1k-10 in `make
// load` went from 3,555 to 3,988 calls/s, for a heap that peaks at five
// times the live one instead of twice.
const gcPercent = 400

func serve(ctx context.Context, cfg config, stderr io.Writer, log *slog.Logger) error {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	gcfg := cfg.Gateway.WithDefaults()
	varDir, err := filepath.Abs(gcfg.VarDir)
	if err != nil {
		return err
	}
	gcfg.VarDir = varDir
	// Checked before auth is set up: refuse a public address when auth is
	// configured off, whatever else is wrong.
	if cfg.AuthMode == authNone {
		if err := gcfg.Validate(); err != nil {
			return err
		}
	}
	if err := setupE2B(cfg, &gcfg); err != nil {
		return err
	}
	cleanupAuth, err := setupAuth(ctx, cfg, &gcfg, stderr, log)
	if err != nil {
		return err
	}
	defer cleanupAuth()
	if err := gcfg.Validate(); err != nil {
		return err
	}
	// Bind first: a port in use is the most common start failure and must
	// not leave containers or half-open logs behind.
	ln, err := net.Listen("tcp", gcfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", gcfg.Addr, err)
	}
	defer ln.Close()
	provider, closeProvider, err := newProvider(ctx, cfg, gcfg, log)
	if err != nil {
		return err
	}
	defer closeProvider.Close()
	// After the provider, which waits for the instance's lock: a restart
	// that overlaps the old process binds the metrics port once the old
	// one has let it go.
	ms, err := listenMetrics(cfg.MetricsAddr, cfg.Pprof)
	if err != nil {
		return err
	}
	if ms != nil {
		defer ms.close()
	}
	// After the provider: it waits for the instance's lock, so a restart
	// that overlaps the old process opens the audit log once the old one
	// has closed it.
	store, err := audit.OpenFile(gcfg.AuditPath())
	if err != nil {
		return fmt.Errorf("open audit log: %w", err)
	}
	defer store.Close()
	g, err := gateway.New(ctx, gcfg, provider, store, log)
	if err != nil {
		return err
	}
	if ms != nil {
		ms.serve(g.MetricsHandler(), cfg.Pprof)
		log.Info("metrics serving", "url", "http://"+ms.ln.Addr().String()+"/metrics", "pprof", cfg.Pprof)
	}
	hs := gateway.NewHTTPServer(g.Handler(), cfg.HTTP)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(gateway.LimitListener(ln, cfg.HTTP)) }()
	log.Info("gateway serving", "url", "http://"+ln.Addr().String()+"/mcp", "auth", cfg.AuthMode, "image", gcfg.Image, "audit", gcfg.AuditPath())

	select {
	case err = <-errc:
	case <-ctx.Done():
	}
	log.Info("shutting down: ending sessions and removing sandboxes")
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	g.Close(shutdownCtx)
	if serr := hs.Shutdown(shutdownCtx); serr != nil && err == nil {
		err = serr
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

func runAudit(args []string, stdout io.Writer) error {
	if len(args) != 2 || args[0] != "verify" {
		return errors.New("usage: gateway audit verify FILE")
	}
	rep, err := audit.VerifyFile(args[1])
	if err != nil {
		return err
	}
	if rep.FirstBroken != 0 {
		return fmt.Errorf("%s: chain broken at line %d: %s (%d records before it verified)", args[1], rep.FirstBroken, rep.Reason, rep.FirstBroken-1)
	}
	fmt.Fprintf(stdout, "%s: %d records, chain intact\n", args[1], rep.Records)
	return nil
}
