package sandboxtest_test

import (
	"testing"

	"github.com/sandgate/sandgate/sandbox"
	"github.com/sandgate/sandgate/sandbox/sandboxtest"
)

// TestLocalConformance runs the provider conformance suite against the
// in-process provider, as sandbox/docker runs it against Docker.
func TestLocalConformance(t *testing.T) {
	t.Parallel()
	sandboxtest.Conformance(t, func(t *testing.T) sandbox.Provider {
		return sandboxtest.NewLocal(t)
	}, sandboxtest.LocalImage)
}
