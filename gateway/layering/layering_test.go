package layering_test

import (
	"testing"

	"github.com/sandgate/sandgate/gateway/layering"
)

// TestRules checks every rule against the module's import graph.
func TestRules(t *testing.T) {
	t.Parallel()
	g, err := layering.Load(t.Context(), layering.Module+"/...")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range layering.Rules {
		for _, v := range r.Check(g) {
			t.Error(v)
		}
	}
}
