package issuer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

const (
	authRequestTTL  = 10 * time.Minute // from /authorize to the consent answer
	codeTTL         = 2 * time.Minute  // from the redirect to /token
	spentCodeTTL    = time.Hour        // how long a replayed code is recognised
	maxAuthRequests = 10000            // pending sign-ins; /authorize is unauthenticated
)

var (
	errAuthRequestGone = errors.New("unknown or expired authorization request")
	errCodeReplayed    = errors.New("authorization code was already used")
)

// authRequests keeps authorization requests and codes in memory.
type authRequests struct {
	mu    sync.Mutex
	byID  map[string]*authRequest
	codes map[string]*codeEntry // by code digest
}

// codeEntry outlives its request once spent, so a replay can still be
// traced to the grant (the refresh token family) it must revoke.
type codeEntry struct {
	requestID string
	issued    time.Time
	spentAt   time.Time
	replayed  bool
}

func newAuthRequests() *authRequests {
	return &authRequests{byID: map[string]*authRequest{}, codes: map[string]*codeEntry{}}
}

func (m *authRequests) add(a *authRequest) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pruneLocked(time.Now())
	if len(m.byID) >= maxAuthRequests {
		return errors.New("too many sign-ins in progress")
	}
	m.byID[a.ID] = a.clone()
	return nil
}

// get returns a copy of a live request.
func (m *authRequests) get(id string) (*authRequest, error) {
	return m.update(id, func(*authRequest) error { return nil })
}

// update changes a live request under the lock and returns a copy.
func (m *authRequests) update(id string, change func(a *authRequest) error) (*authRequest, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.byID[id]
	if !ok || time.Since(a.CreatedAt) > authRequestTTL {
		return nil, errAuthRequestGone
	}
	if err := change(a); err != nil {
		return nil, err
	}
	return a.clone(), nil
}

func (m *authRequests) remove(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.byID, id)
}

// saveCode records the one code of an approved request.
func (m *authRequests) saveCode(id, code string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.byID[id]
	if !ok || !a.Approved {
		return errAuthRequestGone
	}
	for _, e := range m.codes {
		if e.requestID == id {
			return errors.New("a code was already issued for this request")
		}
	}
	m.codes[digest(code)] = &codeEntry{requestID: id, issued: time.Now()}
	return nil
}

// redeem spends a code. The first presentation spends it, whether or not
// the rest of the token request succeeds: that closes the race between
// two concurrent redemptions. A second presentation returns
// errCodeReplayed and the request ID, so the caller can revoke the grant.
func (m *authRequests) redeem(code string) (*authRequest, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	e, ok := m.codes[digest(code)]
	switch {
	case !ok:
		return nil, "", errors.New("unknown authorization code")
	case !e.spentAt.IsZero():
		e.replayed = true
		return nil, e.requestID, errCodeReplayed
	case now.Sub(e.issued) > codeTTL:
		return nil, "", errors.New("authorization code expired")
	}
	e.spentAt = now
	a, ok := m.byID[e.requestID]
	if !ok {
		return nil, "", errAuthRequestGone
	}
	delete(m.byID, e.requestID)
	return a, "", nil
}

// replayed reports whether the code of request id was presented twice.
// The first redemption checks it after storing its refresh token: if a
// replay raced it, one of the two sides sees the other and revokes.
func (m *authRequests) replayed(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.codes {
		if e.requestID == id && e.replayed {
			return true
		}
	}
	return false
}

func (m *authRequests) pruneLocked(now time.Time) {
	for id, a := range m.byID {
		if now.Sub(a.CreatedAt) > authRequestTTL+codeTTL {
			delete(m.byID, id)
		}
	}
	for k, e := range m.codes {
		if e.spentAt.IsZero() && now.Sub(e.issued) > codeTTL || !e.spentAt.IsZero() && now.Sub(e.spentAt) > spentCodeTTL {
			delete(m.codes, k)
		}
	}
}

// CreateAuthRequest stores a validated authorization request. The
// resource comes through ctx because oidc.AuthRequest has no field for it.
func (s *storage) CreateAuthRequest(ctx context.Context, req *oidc.AuthRequest, _ string) (op.AuthRequest, error) {
	a := &authRequest{
		ID:          randomToken(24),
		ClientID:    req.ClientID,
		RedirectURI: req.RedirectURI,
		State:       req.State,
		Nonce:       req.Nonce,
		Challenge:   req.CodeChallenge,
		Resource:    s.resources.fromContext(ctx),
		Scopes:      req.Scopes,
		CreatedAt:   time.Now(),
	}
	if err := s.reqs.add(a); err != nil {
		return nil, err
	}
	return a, nil
}

// AuthRequestByID implements op.AuthStorage.
func (s *storage) AuthRequestByID(_ context.Context, id string) (op.AuthRequest, error) {
	return s.reqs.get(id)
}

// AuthRequestByCode spends a code. A replayed code revokes the refresh
// tokens issued from it (RFC 9700 §4.2.4); zitadel turns the error into
// invalid_grant.
func (s *storage) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	a, family, err := s.reqs.redeem(code)
	if errors.Is(err, errCodeReplayed) {
		s.log.WarnContext(ctx, "authorization code replayed; revoking its grant", "auth_request_id", family)
		if rerr := s.revokeFamily(family); rerr != nil {
			return nil, fmt.Errorf("%w; revoke its grant: %v", err, rerr)
		}
	}
	if err != nil {
		return nil, err
	}
	return a, nil
}

// SaveAuthCode implements op.AuthStorage.
func (s *storage) SaveAuthCode(_ context.Context, id, code string) error {
	return s.reqs.saveCode(id, code)
}

// DeleteAuthRequest implements op.AuthStorage.
func (s *storage) DeleteAuthRequest(_ context.Context, id string) error {
	s.reqs.remove(id)
	return nil
}
