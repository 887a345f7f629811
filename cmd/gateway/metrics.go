package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/sandgate/sandgate/gateway"
)

// metricsServer serves /metrics (and with --pprof the Go profiler) on a
// listener of its own, so that the public MCP address never exposes them
// and an operator can firewall them apart. The listener is bound at start
// with the main one; the handler comes once the gateway exists.
type metricsServer struct {
	ln  net.Listener
	srv *http.Server
}

// listenMetrics binds addr ("" turns metrics off). The profiler is
// refused on anything but loopback: profiles show the gateway's internals
// to whoever can reach them.
func listenMetrics(addr string, withPprof bool) (*metricsServer, error) {
	if addr == "" {
		if withPprof {
			return nil, fmt.Errorf("--pprof needs --metrics-addr: the profiler is served on the metrics listener")
		}
		return nil, nil
	}
	if host, _, err := net.SplitHostPort(addr); withPprof && (err != nil || !gateway.IsLoopback(host)) {
		return nil, fmt.Errorf("--pprof is served only on a loopback --metrics-addr, not %s", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for metrics on %s (--metrics-addr; empty turns metrics off): %w", addr, err)
	}
	return &metricsServer{ln: ln}, nil
}

// serve starts serving metrics from h in the background.
func (m *metricsServer) serve(h http.Handler, withPprof bool) {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	if withPprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	// A CPU profile or trace takes as long as its seconds parameter.
	m.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, WriteTimeout: 5 * time.Minute}
	go m.srv.Serve(m.ln)
}

func (m *metricsServer) close() {
	if m.srv != nil {
		_ = m.srv.Close()
	} else {
		_ = m.ln.Close()
	}
}
