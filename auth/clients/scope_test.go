package clients_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/clients"
)

// TestProtocolScopes: openid and offline_access, which the issuer
// advertises, are accepted in registrations and metadata documents. Naming
// only protocol scopes leaves the gateway scopes at their default, all.
func TestProtocolScopes(t *testing.T) {
	t.Parallel()
	all := strings.Join(auth.AllScopes, " ")
	cases := []struct {
		scope, want string
	}{
		{"sandbox:exec offline_access", "sandbox:exec offline_access"},
		{"openid offline_access sandbox:exec", "sandbox:exec openid offline_access"},
		{"offline_access", all + " offline_access"},
		{"openid openid", all + " openid"},
		{"", all},
	}
	for _, tc := range cases {
		t.Run(tc.scope, func(t *testing.T) {
			t.Parallel()
			rec := register(t, newMemStore(), clients.RegistrationOptions{}, "application/json",
				`{"redirect_uris":["https://app.example.com/cb"],"scope":"`+tc.scope+`"}`)
			if rec.Code != http.StatusCreated {
				t.Fatalf("register: %d %s", rec.Code, rec.Body)
			}
			if got := decodeBody(t, rec)["scope"]; got != tc.want {
				t.Errorf("registration scope = %q, want %q", got, tc.want)
			}
			doc := `{"client_id":"` + fuzzClientID + `","redirect_uris":["https://app.example.com/cb"],"scope":"` + tc.scope + `"}`
			got, err := clients.ParseDocument([]byte(doc), fuzzClientID)
			if err != nil {
				t.Fatalf("document: %v", err)
			}
			if !slices.Equal(got.Scopes, strings.Fields(tc.want)) {
				t.Errorf("document scopes = %v, want %s", got.Scopes, tc.want)
			}
		})
	}
}
