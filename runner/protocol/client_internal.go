package protocol

import (
	"errors"
	"fmt"
	"sync"

	"github.com/coder/websocket"
)

// maxQueuedBytes bounds the events one request may have waiting for its
// consumer. An honest runner never comes near it (output is capped at
// 1 MiB per stream and consumers keep up); the bound is there because the
// runner shares its uid with the code it runs and must not be trusted to
// stay within its caps.
const maxQueuedBytes = 16 << 20

// call collects the events of one request. The read loop appends and never
// blocks, so one slow consumer cannot stall the other requests on the
// connection.
type call struct {
	mu     sync.Mutex
	events []Event
	queued int           // bytes of Data, Result and Payload in events
	notify chan struct{} // capacity 1: "events is not empty"
}

// push queues ev and reports false when the queue is over its bound.
func (cl *call) push(ev Event) bool {
	cl.mu.Lock()
	cl.events = append(cl.events, ev)
	cl.queued += len(ev.Data) + len(ev.Result) + len(ev.Payload)
	over := cl.queued > maxQueuedBytes
	cl.mu.Unlock()
	select {
	case cl.notify <- struct{}{}:
	default:
	}
	return !over
}

func (cl *call) take() []Event {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	evs := cl.events
	cl.events, cl.queued = nil, 0
	return evs
}

func (cl *call) putBack(evs []Event) {
	cl.mu.Lock()
	cl.events = append(evs, cl.events...)
	cl.mu.Unlock()
	select {
	case cl.notify <- struct{}{}:
	default:
	}
}

func (c *Client) register(id uint64) (*call, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return nil, notDelivered{c.err}
	}
	cl := &call{notify: make(chan struct{}, 1)}
	c.pending[id] = cl
	return cl, nil
}

func (c *Client) unregister(id uint64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// send writes one request frame, as a binary message when it has a
// payload. coder/websocket serialises concurrent writers itself.
func (c *Client) send(req Request, params any) error {
	frame, err := EncodeRequest(req, params)
	if err != nil {
		return &Error{Code: CodeInvalid, Message: fmt.Sprintf("encode %s params: %v", req.Op, err)}
	}
	if req.Payload != nil {
		err = WritePayload(c.life, c.conn, frame, req.Payload)
	} else {
		err = c.conn.Write(c.life, websocket.MessageText, frame)
	}
	if err != nil {
		c.fail(fmt.Errorf("write to runner: %w", err))
		return notDelivered{c.Err()}
	}
	return nil
}

func (c *Client) readLoop() {
	for {
		frame, payload, err := ReadMessage(c.life, c.conn)
		if err != nil {
			c.fail(fmt.Errorf("read from runner: %w", err))
			if errors.Is(err, ErrMalformed) {
				_ = c.conn.Close(websocket.StatusProtocolError, "bad message")
			}
			return
		}
		var ev Event
		if err := Unmarshal(frame, &ev); err != nil {
			c.fail(fmt.Errorf("decode runner frame: %w", err))
			_ = c.conn.Close(websocket.StatusProtocolError, "bad frame")
			return
		}
		ev.Payload = payload
		c.mu.Lock()
		cl := c.pending[ev.ID]
		c.mu.Unlock()
		if cl != nil && !cl.push(ev) {
			c.fail(fmt.Errorf("request %d queued more than %d bytes of events; the runner is misbehaving", ev.ID, maxQueuedBytes))
			_ = c.conn.Close(websocket.StatusPolicyViolation, "event flood")
			return
		}
	}
}

// fail records the first connection error and wakes every waiter.
func (c *Client) fail(cause error) {
	c.failWith(&Error{Code: CodeUnavailable, Message: "runner connection lost: " + cause.Error()})
}

// failWith records err as the connection's error unless one is already
// recorded, and wakes every waiter.
func (c *Client) failWith(err *Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.err = err
	close(c.done)
	c.cancel()
}

// notDelivered marks the error of a request that never reached the runner:
// the connection was already lost, or the write failed. Nothing ran.
type notDelivered struct{ err error }

func (e notDelivered) Error() string { return e.err.Error() }
func (e notDelivered) Unwrap() error { return e.err }

// NotDelivered reports whether err is that of a request the runner never
// received, which is therefore safe to send again on a new connection.
func NotDelivered(err error) bool {
	var nd notDelivered
	return errors.As(err, &nd)
}
