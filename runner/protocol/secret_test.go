package protocol_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/runner/protocol"
)

// echoServer serves ln behind a SecretListener, echoing each connection's
// data back, and reports each connection's read error on errs.
func echoServer(t *testing.T, secret []byte) (addr string, errs <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	sl := protocol.SecretListener(ln, secret)
	ch := make(chan error, 16)
	go func() {
		for {
			c, err := sl.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, err := io.Copy(c, c)
				ch <- err
			}()
		}
	}()
	return ln.Addr().String(), ch
}

func TestSecretListener(t *testing.T) {
	t.Parallel()
	secret := bytes.Repeat([]byte{7}, protocol.SecretSize)
	addr, errs := echoServer(t, secret)

	// A client that connects and says nothing must not hold up the others.
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()

	good, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	if err := protocol.WriteSecret(good, secret); err != nil {
		t.Fatal(err)
	}
	if _, err := good.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 5)
	if _, err := io.ReadFull(good, got); err != nil || string(got) != "hello" {
		t.Fatalf("echo through the right secret: %q, %v", got, err)
	}

	bad, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	wrong := bytes.Repeat([]byte{8}, protocol.SecretSize)
	if _, err := bad.Write(append(wrong, "hello"...)); err != nil {
		t.Fatal(err)
	}
	if n, err := bad.Read(make([]byte, 5)); err == nil {
		t.Fatalf("a wrong secret was answered with %d bytes", n)
	}
	if err := <-errs; !errors.Is(err, protocol.ErrBadSecret) {
		t.Fatalf("server side of a wrong secret: %v, want ErrBadSecret", err)
	}
}

func TestParseSecret(t *testing.T) {
	t.Parallel()
	hex := strings.Repeat("ab", protocol.SecretSize)
	b, err := protocol.ParseSecret(hex + "\n")
	if err != nil || len(b) != protocol.SecretSize || b[0] != 0xab {
		t.Fatalf("ParseSecret(valid) = %x, %v", b, err)
	}
	for _, bad := range []string{"", "zz", hex[:62], hex + "ab"} {
		if _, err := protocol.ParseSecret(bad); err == nil {
			t.Errorf("ParseSecret(%q) accepted", bad)
		}
	}
	if err := protocol.WriteSecret(io.Discard, []byte("short")); err == nil {
		t.Error("WriteSecret accepted a short secret")
	}
}
