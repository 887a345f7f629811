package main

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHealthcheck(t *testing.T) {
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
		w.Write([]byte("ok\n"))
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	var out bytes.Buffer
	if err := run(t.Context(), []string{"healthcheck", "--addr", addr}, &out, &out); err != nil {
		t.Fatalf("healthy gateway: %v", err)
	}
	status = http.StatusServiceUnavailable
	if err := run(t.Context(), []string{"healthcheck", "--addr", addr}, &out, &out); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("starting gateway: want an error naming 503, got %v", err)
	}
	// A port nobody listens on.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := ln.Addr().String()
	ln.Close()
	if err := run(t.Context(), []string{"healthcheck", "--addr", closed, "--timeout", "2s"}, &out, &out); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("no gateway: want connection refused, got %v", err)
	}
}

func TestMetricsAddrChecks(t *testing.T) {
	if _, err := listenMetrics("", true); err == nil || !strings.Contains(err.Error(), "--metrics-addr") {
		t.Fatalf("--pprof without metrics: %v", err)
	}
	if _, err := listenMetrics("0.0.0.0:0", true); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("--pprof on all interfaces: %v", err)
	}
	ms, err := listenMetrics("127.0.0.1:0", true)
	if err != nil {
		t.Fatal(err)
	}
	ms.close()
}
