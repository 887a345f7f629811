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

// TestRegisterDeviceClient: a command-line agent registers the device
// grant without redirect URIs, and gets no response type.
func TestRegisterDeviceClient(t *testing.T) {
	t.Parallel()
	store := newMemStore()
	rec := register(t, store, clients.RegistrationOptions{}, "application/json",
		`{"client_name":"CLI","grant_types":["urn:ietf:params:oauth:grant-type:device_code","refresh_token","refresh_token"]}`)
	if rec.Code != http.StatusCreated {
		t.Fatalf("register: %d %s", rec.Code, rec.Body)
	}
	resp := decodeBody(t, rec)
	if _, ok := resp["redirect_uris"]; ok {
		t.Errorf("redirect_uris = %v, want none", resp["redirect_uris"])
	}
	if got, _ := resp["response_types"].([]any); got == nil || len(got) != 0 {
		t.Errorf("response_types = %v, want []", resp["response_types"])
	}
	stored, err := store.GetClient(t.Context(), resp["client_id"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(stored.GrantTypes, []string{auth.GrantDeviceCode, auth.GrantRefresh}) || len(stored.RedirectURIs) != 0 {
		t.Errorf("stored record %+v", stored)
	}
}
