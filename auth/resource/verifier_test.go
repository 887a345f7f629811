package resource_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/resource"
)

func TestChainRoutesByShape(t *testing.T) {
	t.Parallel()
	const issuer = "https://issuer.example"
	key := newKey(t, "ES256", "k")
	jwtV, err := resource.NewJWTVerifier(t.Context(), resource.JWTConfig{
		Issuer: issuer, Audience: audience, Keys: staticKeys{{ID: "k", Key: key.public()}},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := newIntrospectionServer(t)
	s.answer("opaque-1", activeAnswer(nil))
	both := resource.Chain(jwtV, s.verifier(nil))
	jwtOnly := resource.Chain(jwtV, nil)
	jwtToken := sign(t, key, claims(issuer))

	tests := []struct {
		name      string
		v         resource.Verifier
		token     string
		wantSub   string
		wantErr   string
		wantCalls int32
	}{
		{name: "JWT to JWT verifier", v: both, token: jwtToken, wantSub: "user-1"},
		{name: "opaque to introspection", v: both, token: "opaque-1", wantSub: "user-9", wantCalls: 1},
		{name: "two dots but not base64url", v: both, token: "a.b c.d", wantErr: "not active", wantCalls: 1},
		{name: "unsigned JWT stays with JWT verifier", v: both, token: strings.Join(strings.Split(jwtToken, ".")[:2], ".") + ".", wantErr: "bad token signature"},
		{name: "opaque without introspection", v: jwtOnly, token: "opaque-1", wantErr: "opaque access tokens are not accepted"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s.calls.Store(0)
			id, err := tc.v.Verify(t.Context(), tc.token)
			if tc.wantErr != "" {
				if !errors.Is(err, auth.ErrInvalidToken) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
			} else if err != nil || id.Subject != tc.wantSub {
				t.Fatalf("Verify = %+v, %v; want subject %s", id, err, tc.wantSub)
			}
			if n := s.calls.Load(); n != tc.wantCalls {
				t.Errorf("introspection calls = %d, want %d", n, tc.wantCalls)
			}
		})
	}
}
