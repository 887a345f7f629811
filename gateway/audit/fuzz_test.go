package audit_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/sandgate/sandgate/gateway/audit"
)

// FuzzVerify feeds arbitrary bytes to Verify: it must never panic, and its
// report must be consistent.
func FuzzVerify(f *testing.F) {
	golden, err := os.ReadFile(filepath.Join("testdata", "record.golden.jsonl"))
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range [][]byte{
		nil, []byte("\n"), []byte("{}\n"), []byte("null\n"), golden, golden[:len(golden)/2],
		bytes.Replace(golden, []byte(`"seq":42`), []byte(`"seq":1`), 1),
		[]byte(`{"seq":1,"id":"x","time":"2025-01-01T00:00:00Z","prev_hash":"","kind":"tool.end","principal":{},"hash":"sha256:00"}` + "\n"),
		[]byte(`{"seq":18446744073709551616}` + "\n"),
		[]byte(`{"time":"not a time"}` + "\n"),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, err := audit.Verify(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("Verify of an in-memory reader failed: %v", err)
		}
		if (rep.FirstBroken == 0) != (rep.Reason == "") {
			t.Fatalf("inconsistent report %+v", rep)
		}
		if rep.FirstBroken != 0 && rep.FirstBroken != rep.Records+1 {
			t.Fatalf("broken at line %d after %d good records", rep.FirstBroken, rep.Records)
		}
	})
}

// FuzzCanonical checks that Digest is deterministic and ignores key order
// and spacing: an object given as raw JSON in two member orders, and the
// value it decodes to, all have one digest.
func FuzzCanonical(f *testing.F) {
	f.Add("command", "ls -la", "cwd", 1.5)
	f.Add("path", "/tmp/<x>&y", "mode", 420.0)
	f.Add("é", "\u2028\x00\"\\", "\U0001F600", -0.0)
	f.Add("a", "\xff", "b", 1e300)
	f.Fuzz(func(t *testing.T, k1, v1, k2 string, n float64) {
		if k1 == k2 {
			return // duplicate keys: the last one wins, so order matters
		}
		key1, _ := json.Marshal(k1)
		val1, _ := json.Marshal(v1)
		key2, _ := json.Marshal(k2)
		num, err := json.Marshal(n)
		if err != nil {
			return // NaN, Inf: not JSON
		}
		a := json.RawMessage(`{` + string(key1) + `:` + string(val1) + `, "nested": {` + string(key2) + `:` + string(num) + `}}`)
		b := json.RawMessage(`{"nested":{` + string(key2) + ":" + string(num) + `},` + string(key1) + ":" + string(val1) + `}`)
		var v any
		if err := json.Unmarshal(a, &v); err != nil {
			t.Fatalf("unmarshal %s: %v", a, err)
		}
		da := audit.Digest(a)
		if da == "" {
			t.Fatalf("Digest(%s) = \"\"", a)
		}
		for _, x := range []any{a, b, v} {
			if d := audit.Digest(x); d != da {
				t.Fatalf("Digest(%v) = %s, Digest(%s) = %s", x, d, a, da)
			}
		}
	})
}
