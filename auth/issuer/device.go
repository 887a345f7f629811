package issuer

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// The device authorization grant (RFC 8628). Like authorization requests,
// device authorizations live in memory only: they last minutes, and a
// restart merely asks the user to start again.
const (
	deviceCodeTTL      = 10 * time.Minute // from /device_authorization to the last useful poll
	devicePollInterval = 5 * time.Second  // RFC 8628 §3.2 default
	deviceSlowDownStep = 5 * time.Second  // RFC 8628 §3.5
	redeemedDeviceTTL  = time.Hour        // how long a redeemed device code is recognised
	// maxDeviceAuthz bounds the pending device authorizations: the
	// endpoint is open to public clients, and every live user code is one
	// more target for a guess (see deviceIPBurst).
	maxDeviceAuthz = 1000
)

// userCodeConfig is zitadel's RFC 8628 §6.1 recommendation: 8 letters of
// 20 consonants (no vowels, so no words; no digits, so no 0/O or 1/I),
// shown as BCDF-GHJK.
var userCodeConfig = op.UserCodeBase20

type deviceState int

const (
	devicePending deviceState = iota
	deviceApproved
	deviceDenied
	deviceRedeemed
)

var errDeviceGone = errors.New("unknown, expired or already answered device code")

// deviceAuthz is one device authorization: created at
// /device_authorization, answered by a signed-in user at /device,
// redeemed at /token.
type deviceAuthz struct {
	ID       string // names the grant: the refresh token family, logs
	ClientID string
	UserCode string // normalised: the letters without the dash
	Scopes   []string
	Resource string
	Expires  time.Time
	Interval time.Duration
	LastPoll time.Time
	State    deviceState

	// Set by the user's answer.
	Subject  string
	Tenant   string
	AuthTime time.Time

	RedeemedAt time.Time
	replayed   bool
}

// deviceAuthzs keeps device authorizations by the digest of their device
// code, so what is kept could not be used even if it were read.
type deviceAuthzs struct {
	mu     sync.Mutex
	now    func() time.Time
	byCode map[string]*deviceAuthz // by device code digest
	byUser map[string]string       // user code → device code digest
}

func newDeviceAuthzs() *deviceAuthzs {
	return &deviceAuthzs{now: time.Now, byCode: map[string]*deviceAuthz{}, byUser: map[string]string{}}
}

// add creates a device authorization and returns its device code and
// user code (normalised).
func (m *deviceAuthzs) add(clientID string, scopes []string, resource string) (deviceCode string, d deviceAuthz, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	m.pruneLocked(now)
	if len(m.byCode) >= maxDeviceAuthz {
		return "", deviceAuthz{}, errors.New("too many device sign-ins in progress")
	}
	deviceCode, _ = op.NewDeviceCode(32)
	var user string
	for user == "" || m.byUser[user] != "" {
		code, err := op.NewUserCode([]rune(userCodeConfig.CharSet), userCodeConfig.CharAmount, 0)
		if err != nil {
			return "", deviceAuthz{}, err
		}
		user = code
	}
	e := &deviceAuthz{ID: randomToken(24), ClientID: clientID, UserCode: user, Scopes: slices.Clone(scopes),
		Resource: resource, Expires: now.Add(deviceCodeTTL), Interval: devicePollInterval}
	m.byCode[digest(deviceCode)] = e
	m.byUser[user] = digest(deviceCode)
	return deviceCode, e.clone(), nil
}

// pending returns the live, unanswered authorization a user code names.
func (m *deviceAuthzs) pending(userCode string) (deviceAuthz, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.byCode[m.byUser[normaliseUserCode(userCode)]]
	if !ok || e.State != devicePending || !m.now().Before(e.Expires) {
		return deviceAuthz{}, false
	}
	return e.clone(), true
}

// answer records the user's approval or denial of a pending
// authorization. An authorization is answered once.
func (m *deviceAuthzs) answer(id string, approve bool, subject, tenant string, authTime time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.byCode {
		if e.ID != id {
			continue
		}
		if e.State != devicePending || !m.now().Before(e.Expires) {
			return errDeviceGone
		}
		e.State = deviceDenied
		if approve {
			e.State, e.Subject, e.Tenant, e.AuthTime = deviceApproved, subject, tenant, authTime
		}
		delete(m.byUser, e.UserCode) // a user code is entered once
		return nil
	}
	return errDeviceGone
}

// poll is one token request with a device code. It redeems an approved
// authorization (once), and otherwise answers with the RFC 8628 §3.5
// error the client acts on. A redeemed code presented again returns the
// authorization with invalid_grant, so the caller can revoke its grant.
func (m *deviceAuthzs) poll(deviceCode, clientID, resource string) (deviceAuthz, *oidc.Error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	e, ok := m.byCode[digest(deviceCode)]
	switch {
	case !ok:
		return deviceAuthz{}, oidc.ErrInvalidGrant().WithDescription("unknown device_code")
	case e.ClientID != clientID:
		return deviceAuthz{}, oidc.ErrInvalidGrant().WithDescription("device_code was issued to another client")
	case resource != "" && resource != e.Resource:
		return deviceAuthz{}, oidc.ErrInvalidTarget().WithDescription("this device_code is for resource %q", e.Resource)
	case e.State == deviceRedeemed:
		e.replayed = true
		return e.clone(), oidc.ErrInvalidGrant().WithDescription("device_code was already used")
	case e.State == deviceDenied:
		return deviceAuthz{}, oidc.ErrAccessDenied().WithDescription("the user denied the request")
	case !now.Before(e.Expires):
		return deviceAuthz{}, oidc.ErrExpiredDeviceCode().WithDescription("the device_code expired; start again")
	case e.State == deviceApproved:
		e.State, e.RedeemedAt = deviceRedeemed, now
		return e.clone(), nil
	}
	early := !e.LastPoll.IsZero() && now.Sub(e.LastPoll) < e.Interval
	e.LastPoll = now
	if early {
		e.Interval += deviceSlowDownStep
		return deviceAuthz{}, oidc.ErrSlowDown().WithDescription("poll at most every %d seconds", int(e.Interval/time.Second))
	}
	return deviceAuthz{}, oidc.ErrAuthorizationPending()
}

// replayed reports whether the redeemed authorization id was presented
// again; see CreateAccessAndRefreshTokens.
func (m *deviceAuthzs) replayed(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.byCode {
		if e.ID == id {
			return e.replayed
		}
	}
	return false
}

// pruneLocked forgets authorizations nobody can use any more. Expired
// ones are kept for another lifetime so that a late poll still learns
// expired_token rather than "unknown".
func (m *deviceAuthzs) pruneLocked(now time.Time) {
	for k, e := range m.byCode {
		if e.State == deviceRedeemed && now.Sub(e.RedeemedAt) > redeemedDeviceTTL ||
			e.State != deviceRedeemed && now.Sub(e.Expires) > deviceCodeTTL {
			delete(m.byCode, k)
			if m.byUser[e.UserCode] == k {
				delete(m.byUser, e.UserCode)
			}
		}
	}
}

func (e *deviceAuthz) clone() deviceAuthz {
	c := *e
	c.Scopes = slices.Clone(e.Scopes)
	return c
}

// normaliseUserCode accepts what people type: any case, with or without
// the dash or spaces.
func normaliseUserCode(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == ' ' {
			return -1
		}
		return r
	}, strings.ToUpper(strings.TrimSpace(s)))
}

// displayUserCode shows a normalised user code as people read it.
func displayUserCode(code string) string {
	if n := userCodeConfig.DashInterval; len(code) > n {
		return code[:n] + "-" + code[n:]
	}
	return code
}
