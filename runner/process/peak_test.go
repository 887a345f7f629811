package process_test

import (
	"bytes"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/runner/protocol"
)

// TestRunMemoryPeak checks that MemoryPeakBytes is the call's, not the
// runner's: the runner's own past peak (here 256 MiB the test allocated
// and freed) must not show in a small command's figure. The runner's
// current size remains a floor (see resetPeakRSS), which under the race
// detector is large, so the bounds are relative to it.
func TestRunMemoryPeak(t *testing.T) {
	m := newManager(t)
	big := bytes.Repeat([]byte{1}, 256<<20)
	big[len(big)-1] = 2
	big = nil
	debug.FreeOSMemory()
	rss := currentRSS(t)
	tests := []struct {
		cmd      string
		min, max int64
	}{
		{"true", 0, rss + 32<<20},
		{"python3 -c 'a = bytearray(160 << 20)'", 160 << 20, max(rss, 160<<20) + 64<<20},
	}
	for _, tt := range tests {
		res, err := m.Run(t.Context(), protocol.ExecRequest{Command: tt.cmd}, func(protocol.Event) {})
		if err != nil {
			t.Fatal(err)
		}
		if res.MemoryPeakBytes < tt.min || res.MemoryPeakBytes > tt.max {
			t.Errorf("%s: MemoryPeakBytes = %d MiB, want %d-%d MiB", tt.cmd, res.MemoryPeakBytes>>20, tt.min>>20, tt.max>>20)
		}
	}
}

// currentRSS returns the test process's resident size in bytes.
func currentRSS(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Fatal(err)
	}
	pages, _ := strconv.ParseInt(strings.Fields(string(b))[1], 10, 64)
	return pages * int64(os.Getpagesize())
}
