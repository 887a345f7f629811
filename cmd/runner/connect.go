package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// runConnect implements `runner connect [--proxy ADDR] HOST PORT`: it
// joins stdin and stdout to HOST:PORT through the sandbox's egress proxy,
// so ssh's ProxyCommand and git's GIT_PROXY_COMMAND work with no nc or
// socat in the image.
func runConnect(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("runner connect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	proxyAddr := fs.String("proxy", "127.0.0.1:3128", "the sandbox's egress proxy")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return errors.New("usage: runner connect [--proxy ADDR] HOST PORT")
	}
	target := net.JoinHostPort(strings.Trim(fs.Arg(0), "[]"), fs.Arg(1))
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", *proxyAddr)
	if err != nil {
		return fmt.Errorf("reach the egress proxy at %s: %w", *proxyAddr, err)
	}
	defer conn.Close()
	br, err := tunnel(conn, target)
	if err != nil {
		return err
	}
	return pump(conn, br, stdin, stdout)
}

// tunnel asks the proxy for target and returns the reader positioned
// after its answer.
func tunnel(conn net.Conn, target string) (*bufio.Reader, error) {
	_ = conn.SetDeadline(time.Now().Add(60 * time.Second))
	defer conn.SetDeadline(time.Time{})
	if _, err := fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target); err != nil {
		return nil, fmt.Errorf("send CONNECT: %w", err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		return nil, fmt.Errorf("read the proxy's answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		return nil, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return br, nil
}

// pump copies stdin to the connection and the connection to stdout until
// the remote side closes. The end of stdin half-closes the connection,
// so the remote sees EOF and can still answer. The stdin copy is left
// behind when the remote closes first: the process is about to exit.
func pump(conn net.Conn, br *bufio.Reader, stdin io.Reader, stdout io.Writer) error {
	go func() {
		if _, err := io.Copy(conn, stdin); err == nil {
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.CloseWrite()
			}
		}
	}()
	if _, err := io.Copy(stdout, br); err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("relay: %w", err)
	}
	return nil
}
