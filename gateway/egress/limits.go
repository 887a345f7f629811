package egress

import (
	"fmt"
	"sync"
	"time"
)

// Limits bound one sandbox's egress. Zero fields take DefaultLimits.
type Limits struct {
	// MaxConns bounds the sandbox's open connections.
	MaxConns int
	// ConnsPerMinute bounds how fast the sandbox opens connections (a
	// budget refilled continuously). Past it a connection is refused
	// without a record of its own: one record then counts them, so a
	// loop of refused connections cannot flood the audit log, whose
	// failure would stop every tenant's calls.
	ConnsPerMinute int
	// BytesPerMinute bounds the bytes moved, both directions together,
	// over any minute; a connection that would exceed it is closed. It
	// is a budget that refills continuously, so a burst of a whole
	// minute's worth is allowed at once.
	BytesPerMinute int64
	// IdleTimeout closes a connection on which nothing moved this long.
	IdleTimeout time.Duration
	// DialTimeout bounds resolving and connecting to the destination.
	DialTimeout time.Duration
}

// DefaultLimits are what a deployment gets unless it says otherwise:
// room for package installs and a clone of a large repository at full
// speed, not for a sandbox to become a bulk relay.
var DefaultLimits = Limits{
	MaxConns:       128,
	ConnsPerMinute: 600,
	BytesPerMinute: 4 << 30,
	IdleTimeout:    5 * time.Minute,
	DialTimeout:    10 * time.Second,
}

// WithDefaults returns l with zero fields taken from DefaultLimits.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits
	if l.MaxConns == 0 {
		l.MaxConns = d.MaxConns
	}
	if l.ConnsPerMinute == 0 {
		l.ConnsPerMinute = d.ConnsPerMinute
	}
	if l.BytesPerMinute == 0 {
		l.BytesPerMinute = d.BytesPerMinute
	}
	if l.IdleTimeout == 0 {
		l.IdleTimeout = d.IdleTimeout
	}
	if l.DialTimeout == 0 {
		l.DialTimeout = d.DialTimeout
	}
	return l
}

// Validate reports a limit that makes no sense, naming its flag.
func (l Limits) Validate() error {
	switch {
	case l.MaxConns < 1:
		return fmt.Errorf("egress connection limit %d must be at least 1 (--egress-max-conns)", l.MaxConns)
	case l.ConnsPerMinute < 1:
		return fmt.Errorf("egress connection rate %d per minute must be at least 1 (--egress-conns-per-minute)", l.ConnsPerMinute)
	case l.BytesPerMinute < 64<<10:
		return fmt.Errorf("egress byte budget %d per minute is below 64 KiB (--egress-bytes-per-minute)", l.BytesPerMinute)
	case l.IdleTimeout < time.Second:
		return fmt.Errorf("egress idle timeout %s is below 1s (--egress-idle-timeout)", l.IdleTimeout)
	case l.DialTimeout < 100*time.Millisecond:
		return fmt.Errorf("egress dial timeout %s is below 100ms", l.DialTimeout)
	}
	return nil
}

// budget is a token bucket of bytes: capacity one minute's worth,
// refilled continuously.
type budget struct {
	mu       sync.Mutex
	perMin   int64
	tokens   float64
	refilled time.Time
}

func newBudget(perMinute int64) *budget {
	return &budget{perMin: perMinute, tokens: float64(perMinute), refilled: time.Now()}
}

// take spends n bytes and reports false when the budget cannot cover them.
func (b *budget) take(n int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	b.tokens += now.Sub(b.refilled).Minutes() * float64(b.perMin)
	b.refilled = now
	if cap := float64(b.perMin); b.tokens > cap {
		b.tokens = cap
	}
	if float64(n) > b.tokens {
		b.tokens = 0
		return false
	}
	b.tokens -= float64(n)
	return true
}
