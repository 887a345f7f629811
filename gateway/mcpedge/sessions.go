package mcpedge

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"sync"
	"time"
)

// sessions is mcp-go's SessionIdManager for legacy (2025-06-18 /
// 2025-11-25) sessions, plus the owner binding mcp-go does not do.
//
// Ids are 256 random bits. An id is live from Generate until Terminate
// (DELETE, idle TTL, max lifetime, shutdown); a terminated id is
// remembered for a while so its requests get a clear 404 "terminated".
type Sessions struct {
	mu         sync.Mutex
	live       map[string]*sessionState
	terminated map[string]time.Time
	onEnd      func(id, reason string) // removes the session's sandboxes
}

type sessionState struct {
	owner    string // identity.Identity.Digest, set when initialize succeeds
	created  time.Time
	lastSeen time.Time
	done     chan struct{} // closed when the session ends
}

// terminatedMemory bounds how long terminated ids are remembered.
const terminatedMemory = time.Hour

var errUnknownSession = errors.New("unknown session id")

func NewSessions(onEnd func(id, reason string)) *Sessions {
	return &Sessions{live: map[string]*sessionState{}, terminated: map[string]time.Time{}, onEnd: onEnd}
}

// Generate implements server.SessionIdManager.
func (s *Sessions) Generate() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand failed: " + err.Error()) // never happens on Linux
	}
	id := base64.RawURLEncoding.EncodeToString(b[:])
	s.mu.Lock()
	now := time.Now()
	s.live[id] = &sessionState{created: now, lastSeen: now, done: make(chan struct{})}
	s.mu.Unlock()
	return id
}

// Validate implements server.SessionIdManager.
func (s *Sessions) Validate(id string) (isTerminated bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.live[id]; ok {
		return false, nil
	}
	if _, ok := s.terminated[id]; ok {
		return true, nil
	}
	return false, errUnknownSession
}

// Terminate implements server.SessionIdManager; mcp-go calls it on DELETE.
func (s *Sessions) Terminate(id string) (isNotAllowed bool, err error) {
	s.End(id, "client DELETE")
	return false, nil
}

// end terminates id and removes its sandboxes; ending an ended or unknown
// session does nothing.
func (s *Sessions) End(id, reason string) {
	s.mu.Lock()
	st, ok := s.live[id]
	if ok {
		delete(s.live, id)
		s.terminated[id] = time.Now()
		close(st.done)
	}
	s.mu.Unlock()
	if ok && s.onEnd != nil {
		s.onEnd(id, reason)
	}
}

// bind records the owner of a freshly initialized session. A session that
// is already bound keeps its owner.
func (s *Sessions) bind(id, owner string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.live[id]; ok && st.owner == "" {
		st.owner = owner
	}
}

// ownedBy reports whether id is live and bound to owner. A live session not
// yet bound (initialize still in flight) belongs to nobody.
func (s *Sessions) ownedBy(id, owner string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.live[id]
	return ok && st.owner == owner
}

// doneFor returns a channel closed when id ends, or nil for an id that is
// not live.
func (s *Sessions) doneFor(id string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.live[id]; ok {
		return st.done
	}
	return nil
}

// touch records a request on id.
func (s *Sessions) touch(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.live[id]; ok {
		st.lastSeen = time.Now()
	}
}

// Expired returns live sessions older than maxAge (0: no limit) or
// unseen for idle, with the reason, and forgets terminated ids older
// than terminatedMemory.
func (s *Sessions) Expired(now time.Time, idle, maxAge time.Duration) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	for id, st := range s.live {
		switch {
		case maxAge > 0 && now.Sub(st.created) > maxAge:
			out[id] = "max lifetime"
		case now.Sub(st.lastSeen) > idle:
			out[id] = "idle"
		}
	}
	for id, at := range s.terminated {
		if now.Sub(at) > terminatedMemory {
			delete(s.terminated, id)
		}
	}
	return out
}

// all returns every live session id.
func (s *Sessions) All() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.live))
	for id := range s.live {
		out = append(out, id)
	}
	return out
}
