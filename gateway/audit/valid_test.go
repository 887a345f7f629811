package audit_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sandgate/sandgate/auth/identity"
	"github.com/sandgate/sandgate/gateway/audit"
)

// FuzzAppendVerify puts arbitrary bytes in every string of an event
// (found by reflection, so a field added later is covered too), appends
// it to a log twice, and checks that the log verifies and that each
// record reads back as the event with its strings made valid UTF-8 (each
// run of invalid bytes one U+FFFD) and the backstop caps applied.
func FuzzAppendVerify(f *testing.F) {
	f.Add([]byte("plain ascii"), byte(0))
	f.Add([]byte("echo "+strings.Repeat("€", 80)), byte(7))
	f.Add([]byte("\xff\xfe\xe2\x82"), byte(3))
	f.Add([]byte("é\xc3\u2028\x00\"\\<>&\xed\xa0\x80"), byte(200))
	f.Fuzz(func(t *testing.T, data []byte, shape byte) {
		e := &audit.Event{Summary: map[string]string{}, Connection: &audit.Connection{}, Principal: identity.Identity{Scopes: []string{"", "", ""}}}
		src := &source{data: data, shape: shape}
		fill(reflect.ValueOf(e).Elem(), src)
		for range 3 {
			e.Summary[src.next()] = src.next()
		}
		e.Kind, e.Outcome = audit.KindToolEnd, audit.OutcomeError
		want := expected(e)
		before := deepCopy(e)

		s, path := openSink(t)
		for range 2 {
			ev := *e // shares the summary, scopes and connection, as a caller's events do
			if err := s.Append(t.Context(), &ev); errors.Is(err, audit.ErrInvalid) && strings.Contains(err.Error(), "exceeds") {
				t.Skip("record above MaxRecordSize")
			} else if err != nil {
				t.Fatalf("Append: %v", err)
			}
		}
		if !reflect.DeepEqual(e, before) {
			t.Fatalf("Append changed the caller's maps or slices")
		}
		s.Close()
		mustVerify(t, path, 2)
		for i, line := range readLines(t, path) {
			var got audit.Event
			if err := json.Unmarshal([]byte(line), &got); err != nil {
				t.Fatal(err)
			}
			got.Seq, got.ID, got.Time, got.PrevHash, got.Hash = 0, "", time.Time{}, "", ""
			if !reflect.DeepEqual(&got, want) {
				t.Fatalf("record %d reads back as\n%+v\nwant\n%+v", i+1, got, *want)
			}
		}
	})
}

// source hands out strings cut from data, of lengths chosen by shape and
// data, repeating data so that a short input can make a long string.
type source struct {
	data  []byte
	shape byte
	pos   int
	n     int
}

func (s *source) next() string {
	s.n++
	if len(s.data) == 0 {
		return ""
	}
	size := (int(s.shape)*31 + s.n*97 + int(s.data[s.n%len(s.data)])*13) % 1200
	var b strings.Builder
	for range size {
		b.WriteByte(s.data[s.pos%len(s.data)])
		s.pos++
	}
	return b.String()
}

// fill sets every string reachable from v (struct fields, slice
// elements, through pointers) from src; it leaves time.Time alone.
func fill(v reflect.Value, src *source) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(src.next())
	case reflect.Pointer:
		if !v.IsNil() {
			fill(v.Elem(), src)
		}
	case reflect.Slice:
		for i := range v.Len() {
			fill(v.Index(i), src)
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			return
		}
		for i := range v.NumField() {
			fill(v.Field(i), src)
		}
	}
}

// expected is e as the log must hold it: every string valid UTF-8, the
// summary's values and the error texts cut, two summary keys that became
// one keeping the value of the first in byte order.
func expected(e *audit.Event) *audit.Event {
	w := deepCopy(e)
	walkStrings(reflect.ValueOf(w).Elem(), func(s string) string { return strings.ToValidUTF8(s, "\uFFFD") })
	w.Summary = map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(e.Summary)) {
		if _, dup := w.Summary[strings.ToValidUTF8(k, "\uFFFD")]; !dup {
			w.Summary[strings.ToValidUTF8(k, "\uFFFD")] = runeCut(strings.ToValidUTF8(e.Summary[k], "\uFFFD"), 200)
		}
	}
	w.Error, w.DenyReason = runeCut(w.Error, 1000), runeCut(w.DenyReason, 1000)
	w.ID, w.PrevHash, w.Hash = "", "", "" // the sink's
	return w
}

// walkStrings replaces every string reachable from v by f of it (map
// values are left to the caller).
func walkStrings(v reflect.Value, f func(string) string) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(f(v.String()))
	case reflect.Pointer:
		if !v.IsNil() {
			walkStrings(v.Elem(), f)
		}
	case reflect.Slice:
		for i := range v.Len() {
			walkStrings(v.Index(i), f)
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			return
		}
		for i := range v.NumField() {
			walkStrings(v.Field(i), f)
		}
	}
}

// runeCut is the documented backstop: at most n runes, else n-1 and "…".
func runeCut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// deepCopy copies e with its own summary, scopes and connection.
func deepCopy(e *audit.Event) *audit.Event {
	c := *e
	c.Principal.Scopes = slices.Clone(e.Principal.Scopes)
	if e.Summary != nil {
		c.Summary = make(map[string]string, len(e.Summary))
		for k, v := range e.Summary {
			c.Summary[k] = v
		}
	}
	if e.Connection != nil {
		conn := *e.Connection
		c.Connection = &conn
	}
	return &c
}

// TestAppendInvalidUTF8 is the case that broke the chain: a summary cut
// in the middle of a multi-byte character, and invalid bytes in the
// error, the principal and an egress record's SNI. The log verifies, and
// the caller's shared map, slice and connection are unchanged.
func TestAppendInvalidUTF8(t *testing.T) {
	t.Parallel()
	euro := "echo " + strings.Repeat("€", 80)
	summary := map[string]string{"command": euro[:200]} // what a byte-offset cut left
	scopes := []string{"sandbox:exec", "bad\xff"}
	conn := &audit.Connection{Proxy: "connect", Asked: "x\xfe:443", SNI: "\xc3", Status: 403}
	events := []*audit.Event{
		{Kind: audit.KindToolStart, Principal: identity.Identity{Subject: "al\xffice", Scopes: scopes}, Tool: "run_shell", Summary: summary},
		{Kind: audit.KindToolEnd, Principal: alice, Tool: "read_file", Summary: map[string]string{"path": strings.Repeat("é", 150)[:201]}, Outcome: audit.OutcomeError, Error: "open \xe9\xe9: no such file"},
		{Kind: audit.KindEgress, Principal: alice, SandboxID: "sb\x80", Connection: conn, DenyReason: "refused \xff"},
	}
	s, path := openSink(t)
	for _, e := range events {
		if err := s.Append(context.Background(), e); err != nil {
			t.Fatalf("Append: %v", err)
		}
	}
	mustVerify(t, path, len(events))
	if summary["command"] != euro[:200] || scopes[1] != "bad\xff" || conn.SNI != "\xc3" {
		t.Errorf("Append modified the caller's summary %q, scopes %q or connection %+v", summary, scopes, conn)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !utf8.Valid(raw) || strings.Contains(string(raw), `\ufffd`) {
		t.Errorf("log holds invalid UTF-8 or \\ufffd escapes:\n%s", raw)
	}
}
