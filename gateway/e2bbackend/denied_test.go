package e2bbackend

import (
	"testing"
	"time"
)

// TestDeniedLogBounded: refusals past the burst get no record of their
// own, and the next record says how many went unrecorded, so that a
// flood of refused requests cannot fill the audit log and none goes
// uncounted.
func TestDeniedLogBounded(t *testing.T) {
	d := newDeniedLog()
	now := time.Unix(1_800_000_000, 0)
	for i := range deniedBurst {
		if ok, skipped := d.take(now); !ok || skipped != 0 {
			t.Fatalf("refusal %d of a burst: recorded %v, skipped %d", i, ok, skipped)
		}
	}
	for range 50 {
		if ok, _ := d.take(now); ok {
			t.Fatal("a refusal past the burst got a record")
		}
	}
	if ok, skipped := d.take(now.Add(time.Second)); !ok || skipped != 50 {
		t.Fatalf("a second later: recorded %v, skipped %d; want a record saying 50 went unrecorded", ok, skipped)
	}
}
