package e2b

import (
	"math"
	"strings"
	"testing"
	"time"
)

// TestSeconds: a count of seconds outside its range is refused with the
// range, never multiplied into a wrapped Duration.
func TestSeconds(t *testing.T) {
	tests := []struct {
		v      int64
		lo, hi int64
		want   time.Duration
		ok     bool
	}{
		{1, 1, maxTimeoutSeconds, time.Second, true},
		{300, 1, maxTimeoutSeconds, 5 * time.Minute, true},
		{math.MaxInt32, 1, maxTimeoutSeconds, math.MaxInt32 * time.Second, true},
		{0, 1, maxTimeoutSeconds, 0, false},
		{-1, 1, maxTimeoutSeconds, 0, false},
		{math.MaxInt32 + 1, 1, maxTimeoutSeconds, 0, false},
		{18446744074, 1, maxTimeoutSeconds, 0, false}, // wrapped to 0.29 s before
		{math.MaxInt64 / int64(time.Second), 1, maxTimeoutSeconds, 0, false},
		{math.MaxInt64, 1, maxTimeoutSeconds, 0, false},
		{math.MinInt64, 1, maxTimeoutSeconds, 0, false},
		{3600, 1, maxRefreshSeconds, time.Hour, true},
		{3601, 1, maxRefreshSeconds, 0, false},
	}
	for _, tt := range tests {
		got, err := seconds("timeout", tt.v, tt.lo, tt.hi)
		if tt.ok && (err != nil || got != tt.want) {
			t.Errorf("seconds(%d) = %v, %v; want %v", tt.v, got, err, tt.want)
		}
		if !tt.ok && (err == nil || !strings.Contains(err.Error(), "between 1 and")) {
			t.Errorf("seconds(%d) = %v, %v; want an error saying the range", tt.v, got, err)
		}
	}
}
