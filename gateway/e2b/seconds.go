package e2b

import (
	"fmt"
	"math"
	"time"
)

// Every duration the E2B API takes is a count of seconds in a JSON
// integer. E2B's OpenAPI declares them int32; a larger count, multiplied
// into a time.Duration, overflows: 18446744074 s became 0.29 s and killed
// the sandbox with its files. So each is checked against its range before
// it is converted, and a value outside it is a 400 that says the range.
const (
	// maxTimeoutSeconds bounds a sandbox timeout (create, /timeout,
	// /connect): E2B's int32. The gateway then caps the sandbox's life at
	// its maximum lifetime, as it does any timeout.
	maxTimeoutSeconds = math.MaxInt32
	// maxRefreshSeconds bounds /refreshes' duration, as E2B's API does.
	maxRefreshSeconds = 3600
)

// seconds converts v seconds of the request field name into a Duration,
// or says the range [lo, hi] it must lie in.
func seconds(name string, v, lo, hi int64) (time.Duration, error) {
	if v < lo || v > hi {
		return 0, fmt.Errorf("%s must be between %d and %d seconds, not %d", name, lo, hi, v)
	}
	return time.Duration(v) * time.Second, nil
}
