package runner_test

import (
	"bytes"
	"crypto/rand"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/runner/protocol"
)

// TestIngress: a connection through the runner to a port a program
// listens on inside the sandbox carries bytes both ways, a large body
// whole, and a half-close (the program's answer still comes back after
// the gateway's side ended its writes); a port with nothing on it is
// CodeNotFound with a message that says to start a server; the runner
// announces the feature.
func TestIngress(t *testing.T) {
	t.Parallel()
	d, _ := startRunner(t)
	if c := dial(t, d); !c.Supports(protocol.FeatureIngress) {
		t.Fatal("the runner does not announce ingress")
	}
	// The "program": reads everything until the half-close, then sends
	// it back.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				got, _ := io.ReadAll(c) // until the half-close
				_, _ = c.Write(got)
			}()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port

	body := make([]byte, 8<<20)
	_, _ = rand.Read(body)
	conn, err := protocol.DialIngress(t.Context(), d, port)
	if err != nil {
		t.Fatalf("DialIngress: %v", err)
	}
	defer conn.Close()
	go func() {
		_, _ = conn.Write(body)
		_ = conn.(interface{ CloseWrite() error }).CloseWrite()
	}()
	back, err := io.ReadAll(conn)
	if err != nil || !bytes.Equal(back, body) {
		t.Fatalf("through the runner: %d bytes back (%v), want the %d sent", len(back), err, len(body))
	}

	ln2, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := ln2.Addr().(*net.TCPAddr).Port
	ln2.Close()
	_, err = protocol.DialIngress(t.Context(), d, closed)
	if protocol.CodeOf(err) != protocol.CodeNotFound || !strings.Contains(err.Error(), "start a server") {
		t.Fatalf("a port with nothing on it: %v; want not found, saying to start a server", err)
	}
}

func TestParsePort(t *testing.T) {
	for in, ok := range map[string]bool{"1": true, "65535": true, "3000": true, "0": false, "65536": false, "-1": false, "+80": false, "080": false, "": false, "8o": false} {
		if _, err := protocol.ParsePort(in); (err == nil) != ok {
			t.Errorf("ParsePort(%q): %v", in, err)
		}
	}
}

// BenchmarkIngress measures one request through an ingress connection
// (dial the runner, upgrade, the runner dials the port, one HTTP
// exchange) beside the same request straight to the port.
func BenchmarkIngress(b *testing.B) {
	d, _ := startRunnerWith(b, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	port := ln.Addr().(*net.TCPAddr).Port
	exchange := func(b *testing.B, c net.Conn) {
		defer c.Close()
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadAll(c); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			exchange(b, c)
		}
	})
	b.Run("ingress", func(b *testing.B) {
		for b.Loop() {
			c, err := protocol.DialIngress(b.Context(), d, port)
			if err != nil {
				b.Fatal(err)
			}
			exchange(b, c)
		}
	})
}
