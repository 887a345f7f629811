package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// protocolVersion is the session-based MCP revision: the gateway gives
// each Mcp-Session-Id a sandbox of its own, made on the first tool call.
const protocolVersion = "2025-11-25"

const (
	sessionHeader = "Mcp-Session-Id"
	// maxResponseBytes bounds one response; the largest legitimate one
	// here is a 1 MiB file as JSON text.
	maxResponseBytes = 64 << 20
	// callTimeout bounds one request: the gateway's own call timeout
	// (60 s by default) plus time to create a sandbox.
	callTimeout = 2 * time.Minute
)

// mcpClient speaks MCP over Streamable HTTP by hand, so that what is
// measured is the gateway, not an SDK.
type mcpClient struct {
	endpoint string
	http     *http.Client
	tokens   *tokenSource
	nextID   atomic.Int64

	mu   sync.Mutex
	live map[string]bool // sessions not yet deleted, for the final cleanup
}

// newMCPClient registers an OAuth client and gets its first token, with
// one shared transport sized for conns concurrent requests.
func newMCPClient(ctx context.Context, gw *gatewayProcess, conns int) (*mcpClient, error) {
	hc := &http.Client{Transport: newLoopbackTransport(conns)}
	ts, err := newTokenSource(ctx, gw, hc)
	if err != nil {
		return nil, err
	}
	if _, err := ts.get(ctx); err != nil {
		return nil, err
	}
	return &mcpClient{endpoint: gw.baseURL() + "/mcp", http: hc, tokens: ts, live: map[string]bool{}}, nil
}

// session is one legacy MCP session, and so one sandbox.
type session struct {
	client *mcpClient
	id     string
}

// toolResult is the part of a CallToolResult this program looks at.
type toolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
}

// text joins the result's text content.
func (r toolResult) text() string {
	var parts []string
	for _, c := range r.Content {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// rpcMessage is any JSON-RPC message the gateway sends: a response to us,
// or a notification (progress, output) that precedes it on an SSE stream.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// openSession sends initialize and notifications/initialized.
func (c *mcpClient) openSession(ctx context.Context) (*session, error) {
	id := c.nextID.Add(1)
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"sandgate-load","version":"1"}}}`,
		id, protocolVersion)
	resp, err := c.post(ctx, "", []byte(body))
	if err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	sid := resp.Header.Get(sessionHeader)
	if _, _, _, err := readResponse(resp, id); err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	if sid == "" {
		return nil, fmt.Errorf("initialize: the response has no %s header", sessionHeader)
	}
	c.mu.Lock()
	c.live[sid] = true
	c.mu.Unlock()
	s := &session{client: c, id: sid}
	resp, err = c.post(ctx, sid, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if err != nil {
		return s, fmt.Errorf("notifications/initialized: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusOK {
		return s, fmt.Errorf("notifications/initialized: %w", httpError(resp))
	}
	return s, nil
}

// callTool calls tool with args, JSON encoded beforehand so that the
// client's own encoding cost stays out of the measurement. It returns
// the result, the response's size in bytes, and an error for an HTTP
// error, a JSON-RPC error or a result with isError.
func (s *session) callTool(ctx context.Context, tool string, args []byte) (toolResult, int64, error) {
	res, n, _, err := s.callToolAt(ctx, tool, args, false)
	return res, n, err
}

// callToolAt is callTool that also says when the response had arrived:
// its last byte (for a JSON body) or its event (for an SSE stream),
// before this program decodes the result. Latencies are measured to
// that moment, so that decoding a 1 MiB result here, which costs this
// VM several milliseconds and is the client's work, not the gateway's,
// stays out of them.
func (s *session) callToolAt(ctx context.Context, tool string, args []byte, progress bool) (toolResult, int64, time.Time, error) {
	var res toolResult
	id := s.client.nextID.Add(1)
	resp, err := s.client.post(ctx, s.id, toolCallBody(id, tool, args, progress))
	if err != nil {
		return res, 0, time.Now(), fmt.Errorf("%s: %w", tool, err)
	}
	msg, n, arrived, err := readResponse(resp, id)
	if err != nil {
		return res, n, arrived, fmt.Errorf("%s: %w", tool, err)
	}
	if err := json.Unmarshal(msg.Result, &res); err != nil {
		return res, n, arrived, fmt.Errorf("%s: result is not a CallToolResult: %w", tool, err)
	}
	if res.IsError {
		return res, n, arrived, fmt.Errorf("%s: tool error: %s", tool, truncate(res.text(), 200))
	}
	return res, n, arrived, nil
}

// close deletes the session; the gateway removes its sandboxes before it
// answers.
func (s *session) close(ctx context.Context) error {
	c := s.client
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, c.endpoint, nil)
	if err != nil {
		return err
	}
	if err := c.authorize(ctx, req); err != nil {
		return err
	}
	req.Header.Set(sessionHeader, s.id)
	req.Header.Set("Mcp-Protocol-Version", protocolVersion)
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("DELETE session: %w", err)
	}
	defer resp.Body.Close()
	// 404: the session already ended (idle, or the gateway restarted).
	if resp.StatusCode >= 300 && resp.StatusCode != http.StatusNotFound {
		return fmt.Errorf("DELETE session: %w", httpError(resp))
	}
	c.mu.Lock()
	delete(c.live, s.id)
	c.mu.Unlock()
	return nil
}

// deleteAllSessions deletes every session not yet deleted, so that their
// sandboxes are gone before the gateway is stopped.
func (c *mcpClient) deleteAllSessions(stderr io.Writer) {
	c.mu.Lock()
	var all []*session
	for id := range c.live {
		all = append(all, &session{client: c, id: id})
	}
	c.mu.Unlock()
	if len(all) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	began := time.Now()
	var failed atomic.Int64
	var firstErr error
	var once sync.Once
	forEach(ctx, all, 16, func(ctx context.Context, s *session) {
		if err := s.close(ctx); err != nil {
			failed.Add(1)
			once.Do(func() { firstErr = err })
		}
	})
	fmt.Fprintf(stderr, "load: deleted %d sessions in %v", len(all)-int(failed.Load()), time.Since(began).Round(time.Millisecond))
	if n := failed.Load(); n > 0 {
		fmt.Fprintf(stderr, "; %d failed (first: %v), the gateway's shutdown removes their sandboxes", n, firstErr)
	}
	fmt.Fprintln(stderr)
}

// post sends one JSON-RPC message, with the token and, when sid is set,
// the session.
func (c *mcpClient) post(ctx context.Context, sid string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if err := c.authorize(ctx, req); err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", protocolVersion)
	if sid != "" {
		req.Header.Set(sessionHeader, sid)
	}
	return c.http.Do(req)
}

func (c *mcpClient) authorize(ctx context.Context, req *http.Request) error {
	token, err := c.tokens.get(ctx)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	return nil
}

// toolCallBody builds a tools/call request around arguments already in
// JSON, asking for progress (with the request's id as the token) when
// progress is set.
func toolCallBody(id int64, tool string, args []byte, progress bool) []byte {
	name, _ := json.Marshal(tool)
	b := make([]byte, 0, len(args)+len(name)+96)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"method":"tools/call","params":{"name":`...)
	b = append(b, name...)
	b = append(b, `,"arguments":`...)
	b = append(b, args...)
	if progress {
		b = append(b, `,"_meta":{"progressToken":`...)
		b = strconv.AppendInt(b, id, 10)
		b = append(b, '}')
	}
	return append(b, "}}"...)
}

// readResponse reads and closes resp, and returns the JSON-RPC response
// to request id, the number of body bytes read and when the response had
// arrived (see callToolAt). The body is either one JSON message or an SSE
// stream whose data lines carry messages; the response to id is the last
// one, other messages before it are notifications.
func readResponse(resp *http.Response, id int64) (rpcMessage, int64, time.Time, error) {
	defer resp.Body.Close()
	var msg rpcMessage
	if resp.StatusCode != http.StatusOK {
		return msg, 0, time.Now(), httpError(resp)
	}
	body := &countingReader{r: io.LimitReader(resp.Body, maxResponseBytes)}
	want := strconv.FormatInt(id, 10)
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	var err error
	var arrived time.Time
	switch mediaType {
	case "application/json":
		var data []byte
		data, err = io.ReadAll(body)
		arrived = time.Now()
		if err == nil {
			msg, err = decodeResponse(data, want)
		}
	case "text/event-stream":
		// Events are decoded as they come, to find the one answering id;
		// the answer is the stream's last, so this is its arrival.
		msg, err = readEventStream(body, want)
		arrived = time.Now()
	default:
		arrived = time.Now()
		err = fmt.Errorf("unexpected Content-Type %q", resp.Header.Get("Content-Type"))
	}
	return msg, body.n, arrived, err
}

// readEventStream returns the message with id want from an SSE stream.
func readEventStream(r io.Reader, want string) (rpcMessage, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var data []byte
	for {
		line, readErr := br.ReadBytes('\n')
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0 && len(data) > 0: // an event ends
			if msg, err := decodeResponse(data, want); !errors.Is(err, errNotOurs) {
				return msg, err
			}
			data = data[:0]
		case bytes.HasPrefix(line, []byte("data:")):
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(line[len("data:"):], []byte(" "))...)
		}
		if readErr != nil {
			if len(data) > 0 {
				if msg, err := decodeResponse(data, want); !errors.Is(err, errNotOurs) {
					return msg, err
				}
			}
			if readErr == io.EOF {
				readErr = errors.New("the stream ended without the response")
			}
			return rpcMessage{}, fmt.Errorf("SSE: %w", readErr)
		}
	}
}

// errNotOurs marks a message that is not the awaited response.
var errNotOurs = errors.New("not the awaited response")

// decodeResponse decodes data as the response to request want.
func decodeResponse(data []byte, want string) (rpcMessage, error) {
	var msg rpcMessage
	if err := json.Unmarshal(data, &msg); err != nil {
		return msg, fmt.Errorf("bad JSON-RPC message: %w: %s", err, truncate(string(data), 200))
	}
	if msg.Method != "" || string(bytes.TrimSpace(msg.ID)) != want {
		return msg, errNotOurs
	}
	if msg.Error != nil {
		return msg, fmt.Errorf("JSON-RPC error %d: %s", msg.Error.Code, truncate(msg.Error.Message, 200))
	}
	if len(msg.Result) == 0 {
		return msg, errors.New("JSON-RPC response without result")
	}
	return msg, nil
}

// httpError describes a response with an unexpected status.
func httpError(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	return fmt.Errorf("HTTP %d: %s", resp.StatusCode, truncate(string(body), 200))
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// forEach runs fn on every item with at most workers at once, and returns
// when all have run or ctx ends (items not yet started are skipped).
func forEach[T any](ctx context.Context, items []T, workers int, fn func(context.Context, T)) {
	work := make(chan T)
	var wg sync.WaitGroup
	for range min(workers, len(items)) {
		wg.Go(func() {
			for it := range work {
				fn(ctx, it)
			}
		})
	}
feed:
	for _, it := range items {
		select {
		case work <- it:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
}
