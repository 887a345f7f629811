package tools

import (
	"encoding/json"
	"testing"
)

func TestSingleTypeSchema(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"nullable array", `{"type":["null","array"],"items":{"type":"string"}}`, `{"type":"array","items":{"type":"string"}}`},
		{"null last", `{"type":["integer","null"]}`, `{"type":"integer"}`},
		{"nested and ordered", `{"z":{"type":["null","object"],"b":1,"a":2},"a":[{"type":["null","string"]}]}`,
			`{"z":{"type":"object","b":1,"a":2},"a":[{"type":"string"}]}`},
		{"other unions kept", `{"type":["string","integer"]}`, `{"type":["string","integer"]}`},
		{"only null kept", `{"type":["null"]}`, `{"type":["null"]}`},
		{"property named type", `{"properties":{"type":{"type":["null","string"],"z":1,"a":2}}}`,
			`{"properties":{"type":{"type":"string","z":1,"a":2}}}`},
		{"numbers and escapes", `{"maximum":1e300,"description":"a<b \u00e9"}`, `{"maximum":1e300,"description":"a\u003cb é"}`},
		{"empty", ``, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(singleTypeSchema(json.RawMessage(tt.in)))
			if got != tt.want {
				t.Errorf("singleTypeSchema(%s) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}
