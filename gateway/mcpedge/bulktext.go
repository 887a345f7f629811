package mcpedge

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
)

// Large text results are written into the response by the gateway, not
// encoded by mcp-go. mcp-go encodes a result with encoding/json twice over
// (CallToolResult.MarshalJSON, then the response encoder validates and
// compacts what that returned), which for a 1 MiB read_file was 60% of the
// gateway's CPU for the call. Instead, finish swaps every text content of
// bulkMinBytes or more for a placeholder, mcp-go encodes the small result,
// and the response writer (bindingWriter) replaces the placeholder with
// the text, escaped once, straight into the connection.
//
// The placeholder holds a random nonce drawn for the request: content a
// caller controls cannot forge one, and a placeholder only ever matches
// in its own request's response. mcp-go writes each JSON-RPC message,
// JSON or SSE, with one Write, so a placeholder is never split across
// writes; TestBulkTextSurvivesBothResponseKinds holds it to that.
const bulkMinBytes = 64 << 10

// bulkTexts holds one request's large texts until its response is
// written. The zero value is ready; the nonce is drawn on the first hold,
// so requests without a large text pay nothing.
type bulkTexts struct {
	mu     sync.Mutex
	prefix []byte   // `\u0000sandgate-bulk:<nonce>:` as encoding/json writes it
	texts  []string // by index; "" once written
}

type bulkKey struct{}

func withBulkTexts(ctx context.Context, b *bulkTexts) context.Context {
	return context.WithValue(ctx, bulkKey{}, b)
}

// holdLargeTexts swaps res's large text contents for placeholders when
// the request's response writer will put them back (ctx carries a
// bulkTexts); otherwise it leaves res alone.
func HoldLargeTexts(ctx context.Context, res *mcp.CallToolResult) {
	b, _ := ctx.Value(bulkKey{}).(*bulkTexts)
	if b == nil {
		return
	}
	for i, ct := range res.Content {
		if t, ok := ct.(mcp.TextContent); ok && len(t.Text) >= bulkMinBytes {
			t.Text = b.hold(t.Text)
			res.Content[i] = t
		}
	}
}

// hold keeps text and returns its placeholder: NUL, the nonce and the
// index, NUL. encoding/json writes the NULs as \u0000.
func (b *bulkTexts) hold(text string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.prefix == nil {
		nonce := make([]byte, 16)
		_, _ = rand.Read(nonce)
		b.prefix = []byte(`\u0000sandgate-bulk:` + hex.EncodeToString(nonce) + ":")
	}
	b.texts = append(b.texts, text)
	nonce := b.prefix[len(`\u0000`) : len(b.prefix)-1]
	return "\x00" + string(nonce) + ":" + strconv.Itoa(len(b.texts)-1) + "\x00"
}

// pending reports whether a text waits for its placeholder.
func (b *bulkTexts) pending() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, t := range b.texts {
		if t != "" {
			return true
		}
	}
	return false
}

// writeSpliced writes p to w with every placeholder replaced by its text,
// escaped for a JSON string. It reports len(p) written when all of it
// went out.
func (b *bulkTexts) writeSpliced(w io.Writer, p []byte) (int, error) {
	rest := p
	for {
		i := bytes.Index(rest, b.prefix)
		if i < 0 {
			break
		}
		after := rest[i+len(b.prefix):]
		end := bytes.Index(after, []byte(`\u0000`))
		idx, err := strconv.Atoi(string(after[:max(end, 0)]))
		text, ok := b.take(idx)
		if end < 0 || err != nil || !ok {
			break // not one of ours after all: leave it as written
		}
		if _, err := w.Write(rest[:i]); err != nil {
			return 0, err
		}
		if err := writeJSONStringBody(w, text); err != nil {
			return 0, err
		}
		rest = after[end+len(`\u0000`):]
	}
	if _, err := w.Write(rest); err != nil {
		return 0, err
	}
	return len(p), nil
}

// take returns text i and forgets it, so its memory goes with the write.
func (b *bulkTexts) take(i int) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if i < 0 || i >= len(b.texts) || b.texts[i] == "" {
		return "", false
	}
	t := b.texts[i]
	b.texts[i] = ""
	return t, true
}

// writeJSONStringBody writes s as the inside of a JSON string, exactly as
// encoding/json escapes it (FuzzJSONStringBody): quote, backslash and
// control characters; <, > and & as \u003c, \u003e, \u0026; U+2028 and
// U+2029; invalid UTF-8 as \ufffd. It goes out in chunks of at most
// 32 KiB, so memory does not grow with s.
func writeJSONStringBody(w io.Writer, s string) error {
	const hexDigits = "0123456789abcdef"
	buf := make([]byte, 0, 32<<10)
	flush := func() error {
		_, err := w.Write(buf)
		buf = buf[:0]
		return err
	}
	for i := 0; i < len(s); {
		if len(buf) > cap(buf)-16 {
			if err := flush(); err != nil {
				return err
			}
		}
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case jsonSafe[c]:
				// Copy the run of safe bytes at once.
				j := i + 1
				for j < len(s) && j-i < cap(buf)-len(buf) && s[j] < utf8.RuneSelf && jsonSafe[s[j]] {
					j++
				}
				buf = append(buf, s[i:j]...)
				i = j
				continue
			case c == '"' || c == '\\':
				buf = append(buf, '\\', c)
			case c == '\n':
				buf = append(buf, '\\', 'n')
			case c == '\r':
				buf = append(buf, '\\', 'r')
			case c == '\t':
				buf = append(buf, '\\', 't')
			case c == '\b':
				buf = append(buf, '\\', 'b')
			case c == '\f':
				buf = append(buf, '\\', 'f')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			buf = append(buf, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			buf = append(buf, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			buf = append(buf, s[i:i+size]...)
		}
		i += size
	}
	return flush()
}

// jsonSafe marks the ASCII bytes encoding/json writes as they are (with
// HTML escaping on, as mcp-go's encoder has it).
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()
