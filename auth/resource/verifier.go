package resource

import (
	"context"
	"errors"
	"strings"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/identity"
)

// Verifier checks a bearer access token and reports what it says about its
// bearer.
type Verifier interface {
	// Verify returns the token's identity. An error wrapping
	// auth.ErrInvalidToken means the token is unacceptable; its message
	// holds a reason safe to show the client and never the token. Any other
	// error means the token could not be checked right now (keys or the
	// introspection endpoint unreachable).
	Verify(ctx context.Context, token string) (identity.Identity, error)
}

// maxTokenLen bounds the work spent on one token. Real access tokens are a
// few kilobytes at most; anything larger is refused before it is parsed.
const maxTokenLen = 16 << 10

// invalidError is a rejected token. reason goes to the client verbatim in
// error_description, so it is always a fixed phrase of ours, never text
// taken from the token.
type invalidError struct{ reason string }

func (e *invalidError) Error() string        { return auth.ErrInvalidToken.Error() + ": " + e.reason }
func (e *invalidError) Is(target error) bool { return target == auth.ErrInvalidToken }

// invalid returns an error wrapping auth.ErrInvalidToken with a safe reason.
func invalid(reason string) error { return &invalidError{reason: reason} }

// reasonOf returns the client-safe reason of an invalid-token error. Errors
// from other Verifier implementations get a generic reason because their
// messages were not written to be shown.
func reasonOf(err error) string {
	if ie, ok := errors.AsType[*invalidError](err); ok {
		return ie.reason
	}
	return "the access token is invalid"
}

// Chain returns a Verifier that sends JWT-shaped tokens to jwt and all
// others to opaque. A nil verifier for a token's shape rejects the token,
// so Chain(v, nil) accepts JWTs only.
func Chain(jwt Verifier, opaque Verifier) Verifier {
	return chain{jwt: jwt, opaque: opaque}
}

type chain struct{ jwt, opaque Verifier }

func (c chain) Verify(ctx context.Context, token string) (identity.Identity, error) {
	next, shape := c.opaque, "opaque"
	if looksLikeJWT(token) {
		next, shape = c.jwt, "JWT"
	}
	if next == nil {
		return identity.Identity{}, invalid(shape + " access tokens are not accepted")
	}
	return next.Verify(ctx, token)
}

// looksLikeJWT reports whether token has the JWS compact shape: three
// dot-separated base64url parts. The signature part may be empty so that an
// unsigned ("alg":"none") token reaches the JWT verifier and is refused
// there with a precise reason instead of being sent to introspection.
func looksLikeJWT(token string) bool {
	parts := strings.Split(token, ".")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" {
		return false
	}
	for _, p := range parts {
		for i := 0; i < len(p); i++ {
			if !isBase64URL(p[i]) {
				return false
			}
		}
	}
	return true
}

func isBase64URL(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}
