package proxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxHead bounds an HTTP request head.
const maxHead = 64 << 10

// notAProxyRequest is the answer to anything but a proxy request.
const notAProxyRequest = "this is Sandgate's egress proxy: use it as HTTP_PROXY/HTTPS_PROXY (http://127.0.0.1:3128, CONNECT or absolute URIs) or as a SOCKS5 proxy"

var errHeadTooLarge = errors.New("request head too large")

// serveHTTP serves a CONNECT or an absolute-URI request.
func (s *Server) serveHTTP(ctx context.Context, conn net.Conn, br *bufio.Reader, log *slog.Logger) {
	head, err := readHead(br)
	if err != nil {
		if errors.Is(err, errHeadTooLarge) {
			writeRefusal(conn, &Refusal{Status: http.StatusRequestHeaderFieldsTooLarge, Reason: "sandgate egress: request head over 64 KiB"})
		}
		return
	}
	req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(head)))
	if err != nil {
		writeRefusal(conn, &Refusal{Status: http.StatusBadRequest, Reason: "sandgate egress: malformed request: " + err.Error()})
		return
	}
	dest, err := httpDest(req)
	if err != nil {
		writeRefusal(conn, &Refusal{Status: http.StatusBadRequest, Reason: "sandgate egress: " + err.Error()})
		return
	}
	tunnel, err := s.Open.Open(ctx, dest)
	if err != nil {
		log.Info("egress refused", "host", dest.Host, "port", dest.Port, "error", err)
		writeRefusal(conn, asRefusal(err))
		return
	}
	defer tunnel.Close()
	_ = conn.SetDeadline(time.Time{})
	if dest.Kind == KindConnect {
		if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			return
		}
	} else if _, err := tunnel.Write(head); err != nil {
		// The gateway reads the request itself, from the bytes exactly
		// as the client sent them.
		return
	}
	Relay(conn, br, tunnel)
}

// readHead reads a request head, up to and including its blank line,
// leaving any body in br.
func readHead(br *bufio.Reader) ([]byte, error) {
	var head []byte
	for {
		line, err := br.ReadSlice('\n')
		if len(head)+len(line) > maxHead {
			return nil, errHeadTooLarge
		}
		head = append(head, line...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimRight(line, "\r\n")) == 0 {
			return head, nil
		}
	}
}

// httpDest is where a proxy request goes.
func httpDest(req *http.Request) (Dest, error) {
	if req.Method == http.MethodConnect {
		host, port, err := splitHostPort(req.RequestURI)
		if err != nil {
			return Dest{}, fmt.Errorf("CONNECT needs host:port, got %q", req.RequestURI)
		}
		return Dest{Kind: KindConnect, Host: host, Port: port}, nil
	}
	u := req.URL
	switch {
	case u.Scheme == "http" && u.Host != "":
	case u.Scheme == "https":
		return Dest{}, errors.New("https:// URLs go through CONNECT; set HTTPS_PROXY=http://127.0.0.1:3128 rather than sending the URL to the proxy")
	default:
		return Dest{}, errors.New(notAProxyRequest)
	}
	host, port := u.Hostname(), uint16(80)
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 {
			return Dest{}, fmt.Errorf("bad port in %q", u.Host)
		}
		port = uint16(n)
	}
	if host == "" {
		return Dest{}, fmt.Errorf("no host in %q", req.RequestURI)
	}
	return Dest{Kind: KindHTTP, Host: host, Port: port}, nil
}

func splitHostPort(hp string) (string, uint16, error) {
	host, port, err := net.SplitHostPort(hp)
	if err != nil {
		return "", 0, err
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || n == 0 || host == "" {
		return "", 0, fmt.Errorf("bad host:port %q", hp)
	}
	return host, uint16(n), nil
}

// asRefusal turns an Opener error into what the client is told.
func asRefusal(err error) *Refusal {
	var r *Refusal
	if errors.As(err, &r) {
		return r
	}
	return &Refusal{Status: http.StatusBadGateway, Reason: "sandgate egress: " + err.Error()}
}

// writeRefusal answers with the refusal and nothing else.
func writeRefusal(w io.Writer, r *Refusal) {
	body := strings.TrimSpace(r.Reason) + "\n"
	text := http.StatusText(r.Status)
	if text == "" {
		text = "Refused"
	}
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\nX-Sandgate-Egress: refused\r\n\r\n%s",
		r.Status, text, len(body), body)
}
