package resource

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sandgate/sandgate/auth"
)

const (
	// defaultKeyMaxAge is how long a loaded key set is trusted before the
	// next verification reloads it. It bounds how long a key the issuer
	// has withdrawn keeps verifying when no unknown kid forces a reload.
	defaultKeyMaxAge = 5 * time.Minute
	// reloadTimeout bounds one shared reload.
	reloadTimeout = 15 * time.Second
)

// keySet caches an issuer's verification keys.
//
// Reloads happen on the verification path, never in the background, so the
// set owns no goroutine beyond one reload in flight. Two things trigger a
// reload: a kid we do not know (key rotation), at most once per
// minInterval so that tokens with made-up kids cannot turn the gateway into
// a JWKS flooder; and a set older than maxAge (key withdrawal), retried at
// most once per minInterval while the source is failing. Concurrent
// verifications needing a reload share one.
type keySet struct {
	load        func(context.Context) ([]auth.PublicKey, error)
	minInterval time.Duration
	maxAge      time.Duration

	mu        sync.Mutex
	keys      []auth.PublicKey
	loadedAt  time.Time
	lastMiss  time.Time // start of the last reload caused by an unknown kid
	lastStale time.Time // start of the last reload caused by age
	inflight  *reload
}

// reload is one load shared by every verification that waits for it.
type reload struct {
	done chan struct{}
	err  error // set before done is closed
}

// errKidRequired: with several keys, a token must say which one signed it;
// trying each key in turn would let a token pick among algorithms.
var errKidRequired = invalid("token has no kid but the issuer has several keys")

var errUnknownKey = invalid("token is signed with an unknown key")

// prime loads the set for the first time, under the caller's context.
func (s *keySet) prime(ctx context.Context) error {
	keys, err := s.load(ctx)
	if err != nil {
		return err
	}
	if len(keys) == 0 {
		return fmt.Errorf("issuer publishes no RS256, ES256 or EdDSA signing key")
	}
	s.mu.Lock()
	s.keys, s.loadedAt = keys, time.Now()
	s.mu.Unlock()
	return nil
}

// get returns the key with the given kid, reloading the set when the kid is
// unknown or the set is old and the rate bound allows it.
func (s *keySet) get(ctx context.Context, kid string) (auth.PublicKey, error) {
	s.mu.Lock()
	key, err := s.find(kid)
	if err == errKidRequired {
		s.mu.Unlock()
		return key, err
	}
	stale := time.Since(s.loadedAt) > s.maxAge
	if err == nil && !stale {
		s.mu.Unlock()
		return key, nil
	}
	r := s.inflight
	if r == nil {
		now := time.Now()
		switch {
		case err != nil && now.Sub(s.lastMiss) >= s.minInterval:
			s.lastMiss = now
			r = s.startReload(ctx)
		case stale && now.Sub(s.lastStale) >= s.minInterval:
			s.lastStale = now
			r = s.startReload(ctx)
		}
	}
	s.mu.Unlock()
	if r == nil {
		// Rate bound reached: answer from what we have, which may be a
		// stale key (availability over freshness while the issuer is
		// unreachable) or errUnknownKey.
		return key, err
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		return auth.PublicKey{}, ctx.Err()
	}
	s.mu.Lock()
	key, err = s.find(kid)
	s.mu.Unlock()
	if err == errUnknownKey && r.err != nil {
		// Not the token's fault that we could not look its key up.
		return key, r.err
	}
	return key, err
}

// startReload starts a load shared by all waiters; s.mu must be held.
func (s *keySet) startReload(ctx context.Context) *reload {
	r := &reload{done: make(chan struct{})}
	s.inflight = r
	// The load outlives the request that started it because other
	// requests wait on it too; so it runs detached from that request's
	// cancellation, bounded by reloadTimeout instead.
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reloadTimeout)
	go func() {
		defer cancel()
		keys, err := s.load(lctx)
		s.mu.Lock()
		if err == nil {
			// An empty set is accepted: an issuer withdrawing every key
			// means no token of it should verify any more.
			s.keys, s.loadedAt = keys, time.Now()
		} else {
			r.err = fmt.Errorf("reload verification keys: %w", err)
		}
		s.inflight = nil
		s.mu.Unlock()
		close(r.done)
	}()
	return r
}

// find looks kid up; s.mu must be held. An empty kid matches only when the
// set holds exactly one key.
func (s *keySet) find(kid string) (auth.PublicKey, error) {
	if kid == "" {
		switch len(s.keys) {
		case 0:
			return auth.PublicKey{}, errUnknownKey
		case 1:
			return s.keys[0], nil
		default:
			return auth.PublicKey{}, errKidRequired
		}
	}
	for _, k := range s.keys {
		if k.ID == kid {
			return k, nil
		}
	}
	return auth.PublicKey{}, errUnknownKey
}
