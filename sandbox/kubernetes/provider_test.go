package kubernetes_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/sandgate/sandgate/sandbox"
	"github.com/sandgate/sandgate/sandbox/kubernetes"
)

// TestNewUnavailable: an API server that cannot be reached is
// ErrUnavailable, with the address New tried.
func TestNewUnavailable(t *testing.T) {
	t.Parallel()
	cfg := baseConfig()
	cfg.RESTConfig = &rest.Config{Host: "https://127.0.0.1:1", Timeout: 5 * time.Second}
	_, err := kubernetes.New(t.Context(), cfg)
	if !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("err = %v, want ErrUnavailable naming the API server", err)
	}
}

// TestNewRefusesConfig: New checks the Config before it dials anything.
func TestNewRefusesConfig(t *testing.T) {
	t.Parallel()
	cfg := baseConfig()
	cfg.Key = []byte("short")
	if _, err := kubernetes.New(t.Context(), cfg); err == nil || !strings.Contains(err.Error(), "key") {
		t.Fatalf("err = %v, want the short key refused", err)
	}
}
