package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/runner/proxy"
)

// dialOpener connects every tunnel to one loopback server, or refuses.
type dialOpener struct {
	target string
	refuse *proxy.Refusal
}

func (o dialOpener) Open(ctx context.Context, _ proxy.Dest) (net.Conn, error) {
	if o.refuse != nil {
		return nil, o.refuse
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", o.target)
}

func startProxy(t *testing.T, o proxy.Opener) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { (&proxy.Server{Open: o}).Serve(ctx, ln); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

func TestRunConnect(t *testing.T) {
	// A server that answers what it read once the client half-closes,
	// like a request/response protocol over ssh's ProxyCommand.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		in, _ := io.ReadAll(c)
		io.WriteString(c, "got: "+string(in))
	}()
	addr := startProxy(t, dialOpener{target: ln.Addr().String()})
	var out, errs bytes.Buffer
	if err := runConnect(t.Context(), []string{"--proxy", addr, "example.com", "22"}, strings.NewReader("hello"), &out, &errs); err != nil {
		t.Fatalf("runConnect: %v (%s)", err, errs.String())
	}
	if out.String() != "got: hello" {
		t.Errorf("stdout %q, want the server's answer to stdin", out.String())
	}

	refusing := startProxy(t, dialOpener{refuse: &proxy.Refusal{Status: http.StatusForbidden, Reason: "sandgate egress to example.com:22 refused: not in this sandbox's allowlist"}})
	err = runConnect(t.Context(), []string{"--proxy", refusing, "example.com", "22"}, strings.NewReader(""), &out, &errs)
	if err == nil || !strings.Contains(err.Error(), "403") || !strings.Contains(err.Error(), "not in this sandbox's allowlist") {
		t.Errorf("refused: %v, want the status and the proxy's reason", err)
	}
	if err := runConnect(t.Context(), []string{"example.com"}, nil, &out, &errs); err == nil || !strings.Contains(err.Error(), "usage") {
		t.Errorf("one argument: %v, want usage", err)
	}
}
