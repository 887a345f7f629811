package audit_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/gateway/audit"
)

func TestDigest(t *testing.T) {
	t.Parallel()
	type args struct {
		Path    string `json:"path"`
		Content string `json:"content"`
		Mode    int    `json:"mode"`
	}
	canonical := `{"content":"<a & b>\n","mode":420,"path":"/tmp/x"}`
	sum := sha256.Sum256([]byte(canonical))
	want := "sha256:" + hex.EncodeToString(sum[:])
	same := []struct {
		name string
		v    any
	}{
		{"map", map[string]any{"path": "/tmp/x", "mode": 420, "content": "<a & b>\n"}},
		{"struct in another field order", args{Path: "/tmp/x", Content: "<a & b>\n", Mode: 420}},
		{"raw, other order and spacing", json.RawMessage(`{ "path": "/tmp/x", "mode": 420.0, "content": "\u003ca & b>\n" }`)},
		{"raw, canonical", json.RawMessage(canonical)},
	}
	for _, tt := range same {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for range 20 { // map iteration order varies from run to run
				if got := audit.Digest(tt.v); got != want {
					t.Fatalf("Digest = %s, want %s", got, want)
				}
			}
		})
	}

	different := []any{
		map[string]any{"path": "/tmp/y", "mode": 420, "content": "<a & b>\n"},
		map[string]any{"path": "/tmp/x", "mode": "420", "content": "<a & b>\n"},
		[]any{"/tmp/x"},
		nil,
	}
	for _, v := range different {
		if got := audit.Digest(v); got == want || len(got) != len(want) {
			t.Errorf("Digest(%v) = %q", v, got)
		}
	}
	for _, v := range []any{make(chan int), math.NaN(), json.RawMessage(`{"a":`)} {
		if got := audit.Digest(v); got != "" {
			t.Errorf("Digest(%T) = %q, want \"\"", v, got)
		}
	}
}

// TestDigestDecodedFastPath: decoded arguments skip the round trip, and
// must digest exactly as their raw text does through it.
func TestDigestDecodedFastPath(t *testing.T) {
	for _, raw := range []string{
		`{"b":1.0,"a":[1e2,-0,0.1,"x\u2028y",null,true,{"z":{},"y":[]}],"c":"<&>","d":"\ud83d\ude00\u0001"}`,
		`{"content":"` + strings.Repeat("x", 1<<16) + `"}`,
		`{}`,
	} {
		var decoded any
		if err := json.Unmarshal([]byte(raw), &decoded); err != nil {
			t.Fatal(err)
		}
		if !audit.IsDecodedJSON(decoded) {
			t.Fatalf("%.40s: not seen as decoded JSON", raw)
		}
		if fast, slow := audit.Digest(decoded), audit.Digest(json.RawMessage(raw)); fast != slow || fast == "" {
			t.Fatalf("%.40s: decoded %s, raw %s", raw, fast, slow)
		}
	}
	if audit.IsDecodedJSON(map[string]any{"n": 1}) || audit.IsDecodedJSON(struct{}{}) {
		t.Fatal("an int or a struct taken for decoded JSON")
	}
}

// TestDigestFindsEveryEscapeInAWord puts each kind of byte the canonical
// encoder must not copy as it is at every place of the 8-byte words it
// skips, and holds the digest to encoding/json's bytes.
func TestDigestFindsEveryEscapeInAWord(t *testing.T) {
	for _, special := range []string{`"`, `\`, "\n", "\x00", "\x1f", "\x7f", "é", "\u2028", "\xff"} {
		for at := range 17 {
			s := strings.Repeat("a", at) + special + strings.Repeat("b", 24)
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(s); err != nil {
				t.Fatal(err)
			}
			h := sha256.Sum256(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
			if got, want := audit.Digest(s), "sha256:"+hex.EncodeToString(h[:]); got != want {
				t.Fatalf("Digest(%q) = %s, encoding/json's %s gives %s", s, got, buf.Bytes(), want)
			}
		}
	}
}

// FuzzDigestMatchesMarshal holds Digest's own canonical encoder to
// encoding/json's output (without HTML escaping), the definition of the
// canonical form, for any decoded JSON and any string.
func FuzzDigestMatchesMarshal(f *testing.F) {
	for _, seed := range []string{
		`{"b":1.0,"a":[1e2,-0,0.1,1e21,1e-7,123456789012345678,"x\u2028y\u2029",null,true,{"z":{},"y":[]}],"c":"<&>"}`,
		`"\b\f\n\r\t\u0000\u001f\u007f\"\\/"`, `"\ud800"`, `{"\u00e9":"\ud83d\ude00"}`, `[]`, `3.14159`,
	} {
		f.Add([]byte(seed), "\xff\xfe\x00\u2028")
	}
	f.Fuzz(func(t *testing.T, raw []byte, s string) {
		check := func(v any) {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(v); err != nil {
				return
			}
			h := sha256.Sum256(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
			if want, got := "sha256:"+hex.EncodeToString(h[:]), audit.Digest(v); got != want {
				t.Fatalf("Digest(%#v) = %s, encoding/json gives %s (%s)", v, got, want, buf.Bytes())
			}
		}
		var v any
		if json.Unmarshal(raw, &v) == nil {
			check(v)
		}
		check(map[string]any{"s": s, s: []any{s, 1.5}})
	})
}
