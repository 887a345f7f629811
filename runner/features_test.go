package runner_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/runner/protocol"
)

// TestFeaturesAdvertised: the runner announces every optional feature it
// serves, and a runner that sends no features header (an older build) is
// taken to support none.
func TestFeaturesAdvertised(t *testing.T) {
	t.Parallel()
	all := []string{protocol.FeaturePayload, protocol.FeatureOutputWait, protocol.FeatureAppend}
	tests := []struct {
		name string
		wrap func(http.Handler) http.Handler
		want bool
	}{
		{"current runner", nil, true},
		{"old runner", func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(withoutFeatures{w}, r) })
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, _ := startRunnerWith(t, tt.wrap)
			c := dial(t, d)
			for _, f := range all {
				if c.Supports(f) != tt.want {
					t.Errorf("Supports(%q) = %v, want %v", f, !tt.want, tt.want)
				}
			}
		})
	}
}

// TestAppendThroughTheRunner appends pieces as the gateway sends them:
// as a payload and as base64 in the parameters.
func TestAppendThroughTheRunner(t *testing.T) {
	t.Parallel()
	d, ws := startRunner(t)
	c := dial(t, d)
	var wr protocol.WriteResult
	if _, err := c.CallPayload(t.Context(), protocol.OpFileWrite, protocol.WriteRequest{Path: "up.part", Append: true}, []byte("one,"), &wr); err != nil {
		t.Fatalf("append a payload: %v", err)
	}
	if !wr.Created || wr.Bytes != 4 {
		t.Errorf("first piece: %+v, want created and 4 bytes", wr)
	}
	req := protocol.WriteRequest{Path: "up.part", Append: true, Content: base64.StdEncoding.EncodeToString([]byte("two")), Encoding: protocol.EncodingBase64}
	if err := c.Call(t.Context(), protocol.OpFileWrite, req, &wr); err != nil {
		t.Fatalf("append base64: %v", err)
	}
	if wr.Created || wr.Bytes != 3 {
		t.Errorf("second piece: %+v, want not created and 3 bytes", wr)
	}
	if got, err := os.ReadFile(filepath.Join(ws, "up.part")); err != nil || string(got) != "one,two" {
		t.Errorf("file = %q (%v), want %q", got, err, "one,two")
	}
}

// TestOutputWaitCanceledThroughTheRunner: the gateway's cancellation of a
// waiting process.output reaches the wait. The runner's own answer says
// so; without it the client would give up on its own after a grace
// period with a message of its own.
func TestOutputWaitCanceledThroughTheRunner(t *testing.T) {
	t.Parallel()
	d, _ := startRunner(t)
	c := dial(t, d)
	var info protocol.ProcessInfo
	if err := c.Call(t.Context(), protocol.OpProcessStart, protocol.ExecRequest{Command: "cat", Tag: "quiet"}, &info); err != nil {
		t.Fatal(err)
	}
	if info.Tag != "quiet" {
		t.Errorf("tag %q, want %q", info.Tag, "quiet")
	}
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		errc <- c.Call(ctx, protocol.OpProcessOutput, protocol.ProcessOutputRequest{ID: info.ID, WaitMs: 30000}, nil)
	}()
	cancel()
	err := <-errc
	if protocol.CodeOf(err) != protocol.CodeCanceled || !strings.Contains(err.Error(), "while waiting for output") {
		t.Fatalf("canceled process.output: %v, want the runner's CodeCanceled", err)
	}
}
