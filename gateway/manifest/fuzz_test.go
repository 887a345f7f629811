package manifest_test

import (
	"testing"

	"github.com/sandgate/sandgate/gateway/manifest"
)

// FuzzParse: no input makes Parse panic, and what it accepts is a
// manifest the gateway can serve.
func FuzzParse(f *testing.F) {
	f.Add(valid(nil))
	f.Add([]byte(`{"name":"x","description":"d","inputSchema":{"type":"object","$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/a"}}},"command":["true"],"scope":"sandbox:exec"}`))
	f.Add([]byte(`{"name":"x","description":"d","inputSchema":{"type":"object","properties":{"a":{"pattern":"^a+$"}}},"outputSchema":null,"command":["sh"],"scope":"sandbox:exec","timeout":"1ms"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := manifest.Parse("f.json", data, testOptions)
		if err != nil {
			return
		}
		if m.Name == "" || len(m.Command) == 0 || m.Input == nil || (m.OutputSchema != nil) != (m.Output != nil) {
			t.Fatalf("accepted an incomplete manifest: %+v", m)
		}
		if m.Timeout < 0 || m.Timeout > testOptions.MaxTimeout {
			t.Fatalf("timeout %s out of bounds", m.Timeout)
		}
		_ = m.Input.Validate(map[string]any{"a": "aaa"})
	})
}
