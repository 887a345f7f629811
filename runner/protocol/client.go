package protocol

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"
)

// MaxFrameBytes bounds one websocket message in either direction. The
// largest frames are file writes (64 MiB cap) base64-encoded in JSON.
const MaxFrameBytes = 96 << 20

// cancelGrace is how long Stream waits, after its context ends, for the
// runner's own terminal event (which says what was killed) before giving
// up and returning the context's error.
const cancelGrace = 5 * time.Second

// Liveness. Code in a sandbox runs as the runner's uid and can stop it
// (kill -STOP); a stopped runner keeps its socket open, so without these
// bounds every call would wait for its own deadline and the sandbox would
// never be found dead.
const (
	// PingInterval is how often a Client checks that its runner answers.
	PingInterval = 2 * time.Second
	// PingTimeout is how long a pong may take before the runner counts as
	// stopped. A healthy runner answers in well under a millisecond; one
	// whose sandbox exhausts its CPU quota can be throttled for the rest
	// of a 100 ms CFS period, and a loaded host adds scheduling delay: 4 s
	// is far above both, and a stopped runner is found within
	// PingInterval+PingTimeout.
	PingTimeout = 4 * time.Second
	// HandshakeTimeout bounds Dial's websocket upgrade whatever the
	// caller's deadline: a stopped runner's socket still accepts the
	// connection (the kernel queues it) but nothing answers.
	HandshakeTimeout = 5 * time.Second
)

// Client is the gateway's end of one runner connection. It is safe for
// concurrent use: many requests share the connection, each with its own id.
type Client struct {
	conn   *websocket.Conn
	nextID atomic.Uint64
	// payloads records that the runner takes and gives payloads.
	payloads bool
	// features is the runner's FeaturesHeader.
	features string

	mu      sync.Mutex
	pending map[uint64]*call
	err     error         // set once, when the connection is lost
	done    chan struct{} // closed when the connection is lost

	// life bounds the connection's reads and writes. coder/websocket
	// closes the connection when the context of a Read or Write ends, so
	// per-request contexts must never be passed to it.
	life   context.Context
	cancel context.CancelFunc
}

// A runner just started (a sandbox created or resumed) has, rarely and
// only on a loaded host, reset the first connection it took before
// reading the upgrade request: seen under gVisor and, once in a CI run,
// under runc, and not reproduced in 160 pause/resume cycles under load.
// A reset before any answer means the runner did nothing with the
// request, so Dial tries again, resetRetries more times, resetBackoff
// apart, within HandshakeTimeout. A runner that is really gone refuses
// the next dial (no socket), which is returned at once.
const (
	resetRetries = 2
	resetBackoff = 20 * time.Millisecond
)

// resetBeforeAnswer reports whether a websocket dial failed because the
// peer reset the connection before any HTTP answer came.
func resetBeforeAnswer(resp *http.Response, err error) bool {
	return resp == nil && errors.Is(err, syscall.ECONNRESET)
}

// DialFunc opens the byte stream the websocket runs over (for the Docker
// provider, a unix socket).
type DialFunc func(ctx context.Context) (net.Conn, error)

// Dial connects to a runner and checks that it speaks Version. A runner
// that does not answer the upgrade within HandshakeTimeout gives a
// CodeUnresponsive error.
func Dial(ctx context.Context, dial DialFunc) (*Client, error) {
	transport := &http.Transport{
		DialContext:       func(ctx context.Context, _, _ string) (net.Conn, error) { return dial(ctx) },
		DisableKeepAlives: true,
	}
	header := http.Header{}
	header.Set(VersionHeader, strconv.Itoa(Version))
	hctx, cancel := context.WithTimeout(ctx, HandshakeTimeout)
	defer cancel()
	var (
		conn *websocket.Conn
		resp *http.Response
		err  error
	)
	for try := 0; ; try++ {
		conn, resp, err = websocket.Dial(hctx, "ws://runner"+Path, &websocket.DialOptions{
			HTTPClient: &http.Client{Transport: transport},
			HTTPHeader: header,
		})
		if err == nil || !resetBeforeAnswer(resp, err) || try == resetRetries {
			break
		}
		select {
		case <-time.After(resetBackoff):
		case <-hctx.Done():
		}
	}
	if err != nil {
		if hctx.Err() != nil && ctx.Err() == nil {
			return nil, &Error{Code: CodeUnresponsive, Message: fmt.Sprintf("its runner took the connection but did not answer within %s", HandshakeTimeout)}
		}
		return nil, dialError(resp, err)
	}
	conn.SetReadLimit(MaxFrameBytes)
	life, stop := context.WithCancel(context.Background())
	c := &Client{conn: conn, pending: map[uint64]*call{}, done: make(chan struct{}), life: life, cancel: stop,
		features: resp.Header.Get(FeaturesHeader), payloads: HasFeature(resp.Header.Get(FeaturesHeader), FeaturePayload)}
	go c.readLoop()
	go c.heartbeat()
	return c, nil
}

// heartbeat pings the runner every PingInterval until the connection is
// lost, and fails the connection, with every request on it, when a pong
// does not come within PingTimeout. The runner answers pings from its
// read loop, which runs whatever its handlers are doing.
func (c *Client) heartbeat() {
	t := time.NewTicker(PingInterval)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(c.life, PingTimeout)
		err := c.conn.Ping(ctx)
		late := ctx.Err() == context.DeadlineExceeded
		cancel()
		if late {
			c.failWith(&Error{Code: CodeUnresponsive, Message: fmt.Sprintf("its runner did not answer a heartbeat within %s", PingTimeout)})
			_ = c.conn.CloseNow()
			return
		}
		if err != nil {
			c.fail(fmt.Errorf("heartbeat: %w", err))
			return
		}
	}
}

// dialError turns a refused upgrade into an error that carries the
// runner's explanation (for a version mismatch: both versions).
func dialError(resp *http.Response, err error) error {
	if resp == nil || resp.StatusCode == http.StatusSwitchingProtocols {
		return &Error{Code: CodeUnavailable, Message: "connect to runner: " + err.Error()}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode == http.StatusUpgradeRequired {
		return &Error{Code: CodeUnsupported, Message: "connect to runner: " + string(body)}
	}
	return &Error{Code: CodeUnavailable, Message: fmt.Sprintf("connect to runner: HTTP %d: %s", resp.StatusCode, body)}
}

// Supports reports whether the runner announced feature (a Feature*
// constant) when the connection was made.
func (c *Client) Supports(feature string) bool { return HasFeature(c.features, feature) }

// Done is closed when the connection is lost; Err then says why.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err returns why the connection was lost, or nil while it is up.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close closes the connection. Requests in flight end with CodeUnavailable;
// the runner cancels them on its side.
func (c *Client) Close() error {
	err := c.conn.Close(websocket.StatusNormalClosure, "")
	c.fail(errors.New("connection closed by gateway"))
	return err
}

// Payloads reports whether the runner takes and gives payloads (see
// payload.go), so that CallPayload may be used.
func (c *Client) Payloads() bool { return c.payloads }

// Call sends a request that has no streamed output and decodes its result
// into result (which may be nil).
func (c *Client) Call(ctx context.Context, op Op, params, result any) error {
	_, err := c.CallPayload(ctx, op, params, nil, result)
	return err
}

// CallPayload is Call with bytes beside the JSON both ways: in (nil for
// none) goes as the request's payload, and the result's payload, if any,
// is returned. in may be given only when Payloads reports true.
func (c *Client) CallPayload(ctx context.Context, op Op, params any, in []byte, result any) ([]byte, error) {
	if in != nil && !c.payloads {
		return nil, &Error{Code: CodeUnsupported, Message: fmt.Sprintf("%s: this runner takes no payloads; send the content in the parameters", op)}
	}
	end, err := c.exchange(ctx, Request{Op: op, Payload: in}, params, nil)
	if err != nil {
		return nil, err
	}
	if result != nil && len(end.Result) > 0 {
		if err := Unmarshal(end.Result, result); err != nil {
			return nil, &Error{Code: CodeInternal, Message: fmt.Sprintf("decode %s result: %v", op, err)}
		}
	}
	return end.Payload, nil
}

// Stream sends a request and calls onEvent (if not nil) for every
// non-terminal event, in the order the runner sent them. It returns the
// terminal event's raw result, or its error as an *Error.
//
// When ctx ends, Stream asks the runner to cancel the request and waits a
// short grace for the runner's terminal event, so that the caller still
// learns the outcome (for exec: killed, with exit status and flags).
func (c *Client) Stream(ctx context.Context, op Op, params any, onEvent func(Event)) (json.RawMessage, error) {
	end, err := c.exchange(ctx, Request{Op: op}, params, onEvent)
	return end.Result, err
}

// exchange sends req (its ID is assigned here) with params and returns
// the terminal event, calling onEvent as Stream describes.
func (c *Client) exchange(ctx context.Context, req Request, params any, onEvent func(Event)) (Event, error) {
	id := c.nextID.Add(1)
	op := req.Op
	req.ID = id
	cl, err := c.register(id)
	if err != nil {
		return Event{}, err
	}
	defer c.unregister(id)
	if err := c.send(req, params); err != nil {
		return Event{}, err
	}
	var grace <-chan time.Time
	ctxDone := ctx.Done()
	for {
		for _, ev := range cl.take() {
			if ev.Type == EventEnd {
				if ev.Error != nil {
					return Event{}, ev.Error
				}
				return ev, nil
			}
			if onEvent != nil {
				onEvent(ev)
			}
		}
		select {
		case <-cl.notify:
		case <-c.done:
			// Drain what arrived before the loss, then report it.
			if evs := cl.take(); len(evs) > 0 {
				cl.putBack(evs)
				continue
			}
			return Event{}, c.Err()
		case <-ctxDone:
			ctxDone = nil
			_ = c.send(Request{ID: c.nextID.Add(1), Op: OpCancel}, CancelRequest{Target: id})
			grace = time.After(cancelGrace)
		case <-grace:
			return Event{}, &Error{Code: CodeCanceled, Message: fmt.Sprintf("%s canceled: %v", op, ctx.Err())}
		}
	}
}
