package protocol

import (
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"time"
)

// SecretSize is the length of a runner secret in bytes.
//
// Where the runner listens on TCP (a Kubernetes pod's IP) rather than on a
// unix socket only the gateway can reach, a connection proves it comes from
// the gateway by sending the sandbox's secret as its first SecretSize
// bytes, before the websocket upgrade. The rest of the protocol is the
// same on both transports. The runner answers nothing before the secret is
// checked, and closes a connection whose secret is wrong or late.
const SecretSize = 32

// secretDeadline bounds how long a connection may take to send its
// secret: a caller that connects and sends nothing holds no goroutine of
// the runner longer than this.
const secretDeadline = 10 * time.Second

// ErrBadSecret is what the runner's side of a connection reads when the
// peer sent a wrong secret (or none).
var ErrBadSecret = errors.New("runner connection: wrong or missing secret")

// WriteSecret sends the connection's secret preamble.
func WriteSecret(w io.Writer, secret []byte) error {
	if len(secret) != SecretSize {
		return fmt.Errorf("runner secret is %d bytes, want %d", len(secret), SecretSize)
	}
	_, err := w.Write(secret)
	return err
}

// ParseSecret decodes a secret written as hex (64 characters, surrounding
// white space ignored), the form it takes in a file or a Kubernetes Secret.
func ParseSecret(text string) ([]byte, error) {
	b, err := hex.DecodeString(strings.TrimSpace(text))
	if err != nil || len(b) != SecretSize {
		return nil, fmt.Errorf("runner secret must be %d hex characters", 2*SecretSize)
	}
	return b, nil
}

// ReadSecretFile reads a secret written by ParseSecret's rules.
func ReadSecretFile(path string) ([]byte, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read runner secret: %w", err)
	}
	b, err := ParseSecret(string(text))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}

// SecretListener wraps ln so that every accepted connection must start
// with secret. The check runs on the connection's first Read, in the
// goroutine that serves it, so one slow or silent client never holds up
// Accept for the others.
func SecretListener(ln net.Listener, secret []byte) net.Listener {
	return &secretListener{Listener: ln, secret: append([]byte(nil), secret...)}
}

type secretListener struct {
	net.Listener
	secret []byte
}

func (l *secretListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &secretConn{Conn: c, secret: l.secret}, nil
}

// secretConn checks the preamble before its first byte of data reaches the
// reader; until then, and after a failed check, Read returns an error.
type secretConn struct {
	net.Conn
	secret []byte
	once   sync.Once
	err    error
}

func (c *secretConn) Read(p []byte) (int, error) {
	c.once.Do(c.check)
	if c.err != nil {
		return 0, c.err
	}
	return c.Conn.Read(p)
}

func (c *secretConn) check() {
	got := make([]byte, SecretSize)
	_ = c.Conn.SetReadDeadline(time.Now().Add(secretDeadline))
	_, err := io.ReadFull(c.Conn, got)
	_ = c.Conn.SetReadDeadline(time.Time{})
	if err != nil || subtle.ConstantTimeCompare(got, c.secret) != 1 {
		c.err = ErrBadSecret
		c.Conn.Close()
	}
}
