package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// A tools/call body is decoded once, here at the edge. Its arguments
// (which can be a 64 MiB file, base64-encoded) are taken out, and mcp-go
// is handed the same request with "arguments": {}. Otherwise mcp-go
// would decode the whole body four times (its transport, its era check,
// its envelope, its request), and the handler's validator, digest and
// binding three more: about 450 ms of CPU for one 8 MiB write_file. The
// decoded arguments travel in the request context (rpcMessage.args) to
// the handler, which validates, digests and binds that one value.
//
// The walk uses go-json-experiment's jsontext, and decodeAny decodes the
// arguments with encoding/json's semantics, several times faster on long
// strings. FuzzPeekMessage checks that mcp-go reads the same request from
// the rewritten body, and the same arguments, as encoding/json from the
// original.

// splitToolCall decodes body if it is a well-formed tools/call request
// whose arguments are absent, null or an object. It returns what the edge
// needs, the decoded arguments, and the body to hand mcp-go. ok is false
// for anything else (another method, a shape mcp-go must judge, trailing
// data); the caller then leaves the body alone.
//
// Keys are matched as encoding/json matches struct fields, which is how
// mcp-go reads them: case-insensitively, the last duplicate winning.
// Members the edge does not know are passed on as they came.
func splitToolCall(body []byte) (msg rpcMessage, rest []byte, ok bool) {
	// encoding/json v1 accepts both; jsontext refuses them unless told.
	dec := jsontext.NewDecoder(bytes.NewBuffer(body), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if !expectDelim(dec, '{') {
		return msg, nil, false
	}
	var top, params []rawMember
	var method string
	var idRaw, versionRaw json.RawMessage
	sawParams := false
	for dec.PeekKind() != '}' {
		key, okKey := nextKey(dec)
		if !okKey {
			return msg, nil, false
		}
		var err error
		switch {
		case strings.EqualFold(key, "method"):
			err = readValue(dec, &method)
		case strings.EqualFold(key, "id"):
			idRaw, err = cloneValue(dec)
		case strings.EqualFold(key, "jsonrpc"):
			versionRaw, err = cloneValue(dec)
		case strings.EqualFold(key, "params"):
			if sawParams {
				// encoding/json merges a repeated object into the struct
				// it fills; leave that to mcp-go.
				return msg, nil, false
			}
			sawParams = true
			if params, ok = decodeCallParams(dec, &msg); !ok {
				return msg, nil, false
			}
		default:
			var raw json.RawMessage
			raw, err = cloneValue(dec)
			top = append(top, rawMember{key, raw})
		}
		if err != nil {
			return msg, nil, false
		}
	}
	if !expectDelim(dec, '}') {
		return msg, nil, false
	}
	if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) {
		return msg, nil, false // trailing data: mcp-go calls it invalid JSON
	}
	if method != "tools/call" || !sawParams || msg.Params.Name == "" {
		return msg, nil, false
	}
	msg.Method = method
	if idRaw != nil && json.Unmarshal(idRaw, &msg.ID) != nil {
		return msg, nil, false
	}

	var b bytes.Buffer
	b.WriteByte('{')
	if versionRaw != nil {
		writeMember(&b, "jsonrpc", versionRaw)
	}
	if idRaw != nil {
		writeMember(&b, "id", idRaw)
	}
	writeMember(&b, "method", json.RawMessage(`"tools/call"`))
	for _, m := range top {
		writeMember(&b, m.key, m.raw)
	}
	b.WriteString(`"params":{`)
	for _, m := range params {
		writeMember(&b, m.key, m.raw)
	}
	b.WriteString(`"arguments":{}}}`)
	return msg, b.Bytes(), true
}

// decodeCallParams reads tools/call params into msg: the tool name, _meta
// and the arguments, which must be absent, null or an object. It returns
// the members to pass on to mcp-go (all but the arguments).
func decodeCallParams(dec *jsontext.Decoder, msg *rpcMessage) (keep []rawMember, ok bool) {
	if !expectDelim(dec, '{') {
		return nil, false
	}
	var name string
	var meta json.RawMessage
	var args any
	for dec.PeekKind() != '}' {
		key, okKey := nextKey(dec)
		if !okKey {
			return nil, false
		}
		var err error
		switch {
		case strings.EqualFold(key, "name"):
			err = readValue(dec, &name)
		case strings.EqualFold(key, "_meta"):
			if meta != nil {
				return nil, false // merged by encoding/json, as params above
			}
			meta, err = cloneValue(dec)
		case strings.EqualFold(key, "arguments"):
			// The one large value: decoded in place, with encoding/json's
			// semantics for an any.
			args, err = decodeAny(dec)
		default:
			var raw json.RawMessage
			raw, err = cloneValue(dec)
			keep = append(keep, rawMember{key, raw})
		}
		if err != nil {
			return nil, false
		}
	}
	if !expectDelim(dec, '}') {
		return nil, false
	}
	switch a := args.(type) {
	case nil:
		msg.args = map[string]any{}
	case map[string]any:
		msg.args = a
	default:
		return nil, false // mcp-go answers the precise error
	}
	msg.Params.Name = name
	if meta != nil {
		if json.Unmarshal(meta, &msg.Params.Meta) != nil {
			return nil, false
		}
		keep = append(keep, rawMember{"_meta", meta})
	}
	keep = append(keep, rawMember{"name", mustJSON(name)})
	return keep, true
}

type rawMember struct {
	key string
	raw json.RawMessage
}

func writeMember(b *bytes.Buffer, key string, raw json.RawMessage) {
	b.Write(mustJSON(key))
	b.WriteByte(':')
	b.Write(raw)
	b.WriteByte(',')
}

// mustJSON encodes a string, which cannot fail.
func mustJSON(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

func expectDelim(dec *jsontext.Decoder, kind jsontext.Kind) bool {
	tok, err := dec.ReadToken()
	return err == nil && tok.Kind() == kind
}

func nextKey(dec *jsontext.Decoder) (string, bool) {
	tok, err := dec.ReadToken()
	return tok.String(), err == nil && tok.Kind() == '"'
}

// cloneValue reads the next value as raw JSON the caller may keep (the
// decoder reuses its buffer).
func cloneValue(dec *jsontext.Decoder) (json.RawMessage, error) {
	v, err := dec.ReadValue()
	return json.RawMessage(bytes.Clone(v)), err
}

// decodeAny reads the next value as encoding/json decodes into an any:
// objects as map[string]any (the last duplicate key wins), arrays as
// []any, numbers as float64 (out of range is an error), invalid UTF-8 as
// U+FFFD. A string is copied once, at its size; a general decoder grows a
// buffer for it by doubling, which for an 8 MiB file's content cost
// about 30 ms in copying and page faults.
func decodeAny(dec *jsontext.Decoder) (any, error) {
	switch dec.PeekKind() {
	case '{':
		if _, err := dec.ReadToken(); err != nil {
			return nil, err
		}
		m := map[string]any{}
		for dec.PeekKind() != '}' {
			key, err := dec.ReadToken()
			if err != nil {
				return nil, err
			}
			name := key.String()
			if m[name], err = decodeAny(dec); err != nil {
				return nil, err
			}
		}
		_, err := dec.ReadToken()
		return m, err
	case '[':
		if _, err := dec.ReadToken(); err != nil {
			return nil, err
		}
		a := []any{}
		for dec.PeekKind() != ']' {
			v, err := decodeAny(dec)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := dec.ReadToken()
		return a, err
	case '"':
		raw, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		return unquote(raw), nil
	case '0':
		raw, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		return strconv.ParseFloat(string(raw), 64)
	}
	tok, err := dec.ReadToken() // true, false, null, or a syntax error
	if err != nil {
		return nil, err
	}
	switch tok.Kind() {
	case 't', 'f':
		return tok.Bool(), nil
	case 'n':
		return nil, nil
	}
	return nil, fmt.Errorf("unexpected %v", tok.Kind())
}

// unquote returns the string the JSON string literal raw (already checked
// by the decoder) stands for, as encoding/json has it.
//
// Large payloads (a file's text, code) are where a call's arguments are
// big, and their escapes are nearly all one-letter ones (\n, \t, \",
// \\): between them unquote copies whole runs found with IndexByte instead
// of looking at every byte, which makes a write_file of 8 MiB of lines
// several times cheaper. A \u escape or invalid UTF-8 (which becomes
// U+FFFD) sends the whole literal to jsontext.AppendUnquote, whose only
// possible error for a checked literal is that replacement.
func unquote(raw []byte) string {
	body := raw[1 : len(raw)-1]
	if !utf8.Valid(body) {
		return unquoteSlowly(raw)
	}
	var out strings.Builder
	out.Grow(len(body))
	for {
		i := bytes.IndexByte(body, '\\')
		if i < 0 {
			out.Write(body)
			return out.String()
		}
		c := shortEscapes[body[i+1]] // a checked literal has a byte after '\\'
		if c == 0 {
			return unquoteSlowly(raw)
		}
		out.Write(body[:i])
		out.WriteByte(c)
		body = body[i+2:]
	}
}

// shortEscapes maps the letter after a backslash to the byte it stands
// for, for every JSON escape but \u (0: not one of them).
var shortEscapes = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

func unquoteSlowly(raw []byte) string {
	// The capacity is raw's length, not the body's: AppendUnquote grows
	// its destination to fit the whole literal first, and one byte short
	// would copy the payload once more.
	out, _ := jsontext.AppendUnquote(make([]byte, 0, len(raw)), raw)
	return string(out)
}

// readValue decodes the next (small) value into v as encoding/json would.
func readValue(dec *jsontext.Decoder, v any) error {
	raw, err := dec.ReadValue()
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, v)
}
