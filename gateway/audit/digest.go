package audit

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"
)

// hashPrefix starts every digest and record hash; it names the algorithm.
const hashPrefix = "sha256:"

// Digest returns "sha256:" and the lowercase hex SHA-256 of the canonical
// JSON of v, the form used for Event.ArgsDigest.
//
// The canonical JSON is what encoding/json produces, without HTML escaping,
// for v after a round trip through interface{}: objects have their keys
// sorted by byte value, there is no insignificant whitespace, numbers are
// IEEE 754 doubles printed in the shortest form that round-trips (as in
// ECMAScript), and strings escape only '"', '\\', control characters
// (\b \f \n \r \t, others as \u00xx) and U+2028/U+2029; invalid UTF-8
// becomes U+FFFD. This is RFC 8785 (JCS) except for the U+2028/U+2029
// escapes and key order among characters outside the Basic Multilingual
// Plane; as in JCS, integers beyond ±2^53 lose precision. So a
// json.RawMessage and the map it decodes to have the same digest, whatever
// the key order, spacing or number spelling (1.0, 1e0) of the raw text.
//
// Digest returns "" if v cannot be encoded as JSON (a channel, a function,
// NaN); decoded JSON-RPC arguments never are.
func Digest(v any) string {
	// Decoded JSON (tool arguments) is encoded canonically as it is, and
	// streamed into the hash; any other value is normalised by a round
	// trip first. For a 64 MiB write_file that is one pass over the
	// content and no buffer of its size (encoding/json would grow one by
	// doubling, about four times the content in garbage).
	if !isDecodedJSON(v) {
		b, err := marshal(v)
		if err != nil {
			return ""
		}
		var generic any
		if err := json.Unmarshal(b, &generic); err != nil {
			return ""
		}
		v = generic
	}
	h := sha256.New()
	w := digestWriters.Get().(*bufio.Writer)
	defer digestWriters.Put(w)
	w.Reset(h)
	defer w.Reset(nil) // keep no hash alive in the pool
	if err := writeCanonical(w, v); err != nil {
		return ""
	}
	if err := w.Flush(); err != nil {
		return ""
	}
	return hashPrefix + hex.EncodeToString(h.Sum(nil))
}

// digestWriters holds Digest's 64 KiB buffers: one per call made a tool
// call's largest allocation, most of the bytes the gateway allocated
// under load, and so most of its garbage collection.
var digestWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 64<<10) }}

// writeCanonical writes decoded JSON v exactly as marshal would encode
// it: map keys sorted by byte value, strings escaped as encoding/json
// escapes them without HTML escaping, numbers by encoding/json itself.
// FuzzDigestMatchesMarshal holds it to that.
func writeCanonical(w *bufio.Writer, v any) error {
	switch x := v.(type) {
	case nil:
		w.WriteString("null")
	case bool:
		w.WriteString(strconv.FormatBool(x))
	case string:
		writeString(w, x)
	case float64:
		b, err := json.Marshal(x)
		if err != nil {
			return err
		}
		w.Write(b)
	case []any:
		w.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				w.WriteByte(',')
			}
			if err := writeCanonical(w, e); err != nil {
				return err
			}
		}
		w.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		w.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				w.WriteByte(',')
			}
			writeString(w, k)
			w.WriteByte(':')
			if err := writeCanonical(w, x[k]); err != nil {
				return err
			}
		}
		w.WriteByte('}')
	default:
		return fmt.Errorf("not decoded JSON: %T", v)
	}
	return nil
}

const hexDigits = "0123456789abcdef"

// writeString writes s as a JSON string the way encoding/json does with
// HTML escaping off: '"', '\\' and control characters escaped (\b \f \n
// \r \t short, the rest as \u00xx), invalid UTF-8 as \ufffd, and U+2028
// and U+2029 as \u2028 and \u2029. Runs of plain bytes are written as
// they are.
func writeString(w *bufio.Writer, s string) {
	w.WriteByte('"')
	start := 0
	for i := 0; i < len(s); {
		if i = skipPlain(s, i); i == len(s) {
			break
		}
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			w.WriteString(s[start:i])
			switch b {
			case '"', '\\':
				w.WriteByte('\\')
				w.WriteByte(b)
			case '\b':
				w.WriteString(`\b`)
			case '\f':
				w.WriteString(`\f`)
			case '\n':
				w.WriteString(`\n`)
			case '\r':
				w.WriteString(`\r`)
			case '\t':
				w.WriteString(`\t`)
			default:
				w.WriteString(`\u00`)
				w.WriteByte(hexDigits[b>>4])
				w.WriteByte(hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			w.WriteString(s[start:i])
			w.WriteString(`\ufffd`)
		case c == '\u2028' || c == '\u2029':
			w.WriteString(s[start:i])
			w.WriteString(`\u202`)
			w.WriteByte(hexDigits[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	w.WriteString(s[start:])
	w.WriteByte('"')
}

// skipPlain returns the index of the first 8-byte word of s from i on
// that holds a byte writeString cannot copy as it is (anything but
// printable ASCII other than '"' and '\\'), or of the last, shorter, part:
// a text's runs between its newlines are passed over a word at a time
// instead of a byte at a time, which was most of a large write_file's
// digest. Each test is the classic "has a byte less than n" on the word,
// exact for bytes below 0x80 (checked first); '"' and '\\' are found as
// zero bytes of an XOR.
func skipPlain(s string, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; i+8 <= len(s); i += 8 {
		w := s[i : i+8]
		_ = w[7]
		x := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
			uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
		quote, backslash := x^(ones*'"'), x^(ones*'\\')
		if x&highs != 0 ||
			(x-ones*0x20)&^x&highs != 0 ||
			(quote-ones)&^quote&highs != 0 ||
			(backslash-ones)&^backslash&highs != 0 {
			return i
		}
	}
	return i
}

// isDecodedJSON reports whether v is made only of what json.Unmarshal
// produces into an any (maps, slices, float64, string, bool, nil), for
// which marshal's output is already the canonical form. (A float64 is:
// it prints in the shortest form that reads back as the same float64.)
func isDecodedJSON(v any) bool {
	switch x := v.(type) {
	case nil, string, bool, float64:
		return true
	case map[string]any:
		for _, e := range x {
			if !isDecodedJSON(e) {
				return false
			}
		}
		return true
	case []any:
		for _, e := range x {
			if !isDecodedJSON(e) {
				return false
			}
		}
		return true
	}
	return false
}

// marshal encodes v as one line of JSON without HTML escaping and without
// the encoder's trailing newline.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hashPrefix + hex.EncodeToString(h[:])
}

// seal sets e.Hash and returns e's log line, newline included.
//
// The hash covers e encoded by marshal with Hash empty (so the member is
// omitted). Because hash is the last member, the sealed line is that body
// with `,"hash":"sha256:<hex>"` inserted before the closing brace, which is
// exactly what marshal gives for the sealed event; checkRecord relies on it.
func seal(e *Event) ([]byte, error) {
	e.Hash = ""
	body, err := marshal(e)
	if err != nil {
		return nil, fmt.Errorf("encode audit event: %w", err)
	}
	e.Hash = sum(body)
	line := make([]byte, 0, len(body)+len(e.Hash)+12)
	line = append(line, body[:len(body)-1]...)
	line = append(line, `,"hash":"`...)
	line = append(line, e.Hash...)
	line = append(line, "\"}\n"...)
	return line, nil
}

// checkRecord decodes one line (without its newline) and checks that it is
// a sealed record in canonical form: byte for byte what seal would write
// for the decoded event, so unknown members, duplicate or reordered keys,
// whitespace and non-canonical escapes are all rejected, and its hash
// matches. It does not look at the chain (seq, prev_hash). The returned
// reason is for humans.
func checkRecord(line []byte) (Event, string) {
	var e Event
	if err := json.Unmarshal(line, &e); err != nil {
		return Event{}, "not a JSON record: " + err.Error()
	}
	got := e.Hash
	if got == "" {
		return Event{}, "no hash"
	}
	want, err := seal(&e)
	if err != nil {
		return Event{}, err.Error()
	}
	if e.Hash != got {
		return Event{}, fmt.Sprintf("hash mismatch: record says %s, content hashes to %s", got, e.Hash)
	}
	if !bytes.Equal(want[:len(want)-1], line) {
		return Event{}, "not in canonical form (unknown or reordered members, whitespace or escapes)"
	}
	return e, ""
}
