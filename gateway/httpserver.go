package gateway

import (
	"net"
	"net/http"
	"time"

	"golang.org/x/net/netutil"
)

// HTTPOptions bounds what one client can make the HTTP layer hold before
// a request reaches the gateway's handler. Zero fields take the defaults.
type HTTPOptions struct {
	// ReadHeaderTimeout closes a connection whose request line and
	// headers have not arrived in time (slowloris). Default 10 s.
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes a keep-alive connection with no request in
	// flight. Default 2 min.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds the request line and headers; more is
	// answered 431. Default 64 KiB.
	MaxHeaderBytes int
	// MaxConnections bounds the connections served at once; further ones
	// wait in the kernel's accept queue. Default 4096.
	MaxConnections int
}

// WithDefaults returns o with zero fields filled in.
func (o HTTPOptions) WithDefaults() HTTPOptions {
	if o.ReadHeaderTimeout <= 0 {
		o.ReadHeaderTimeout = 10 * time.Second
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 2 * time.Minute
	}
	if o.MaxHeaderBytes <= 0 {
		o.MaxHeaderBytes = 64 << 10
	}
	if o.MaxConnections <= 0 {
		o.MaxConnections = 4096
	}
	return o
}

// NewHTTPServer returns the http.Server the gateway is served with.
//
// It sets no ReadTimeout and no WriteTimeout on purpose. Both are
// deadlines for the whole request or response, not for inactivity: a
// WriteTimeout would cut a streaming tool call or a session's GET stream
// after that long, and a lapsed ReadTimeout makes net/http's background
// read fail, which cancels the request context of a call still running.
// Tool calls are bounded by the call timeout, sessions by their idle TTL
// and lifetime, and bodies by MaxBodyBytes.
func NewHTTPServer(h http.Handler, opts HTTPOptions) *http.Server {
	opts = opts.WithDefaults()
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: opts.ReadHeaderTimeout,
		IdleTimeout:       opts.IdleTimeout,
		MaxHeaderBytes:    opts.MaxHeaderBytes,
	}
}

// LimitListener returns ln accepting at most opts.MaxConnections
// connections at once. Past the limit Accept waits for a connection to
// close, so the excess costs neither goroutines nor buffers here: it
// waits in the kernel's accept queue, and is refused once that is full.
func LimitListener(ln net.Listener, opts HTTPOptions) net.Listener {
	return netutil.LimitListener(ln, opts.WithDefaults().MaxConnections)
}
