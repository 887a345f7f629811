package clients_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/clients"
)

var fixedNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func register(t *testing.T, store auth.ClientStore, opts clients.RegistrationOptions, contentType, body string) *httptest.ResponseRecorder {
	t.Helper()
	if opts.Now == nil {
		opts.Now = func() time.Time { return fixedNow }
	}
	req := httptest.NewRequest(http.MethodPost, "/register", strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	rec := httptest.NewRecorder()
	clients.RegistrationHandler(store, opts).ServeHTTP(rec, req)
	return rec
}

func decodeBody(t *testing.T, rec *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatalf("response is not a JSON object: %v\n%s", err, rec.Body)
	}
	return m
}

func TestRegisterPublic(t *testing.T) {
	t.Parallel()
	store := newMemStore()
	rec := register(t, store, clients.RegistrationOptions{}, "application/json; charset=utf-8",
		`{"redirect_uris":["http://127.0.0.1:33418/callback","https://app.example.com/cb"],"client_name":"Claude Code","unknown_member":42}`)
	if rec.Code != http.StatusCreated {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	for h, want := range map[string]string{"Content-Type": "application/json", "Cache-Control": "no-store"} {
		if got := rec.Header().Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
	resp := decodeBody(t, rec)
	want := map[string]any{
		"client_id_issued_at":        float64(fixedNow.Unix()),
		"client_secret_expires_at":   float64(0),
		"redirect_uris":              []any{"http://127.0.0.1:33418/callback", "https://app.example.com/cb"},
		"grant_types":                []any{"authorization_code", "refresh_token"},
		"response_types":             []any{"code"},
		"token_endpoint_auth_method": "none",
		"client_name":                "Claude Code",
		"scope":                      strings.Join(auth.AllScopes, " "),
	}
	for k, v := range want {
		if got, _ := json.Marshal(resp[k]); string(got) != mustJSON(t, v) {
			t.Errorf("%s = %s, want %s", k, got, mustJSON(t, v))
		}
	}
	if _, ok := resp["client_secret"]; ok {
		t.Error("a public client got a client_secret")
	}
	id, _ := resp["client_id"].(string)
	if len(id) < 22 || clients.IsMetadataURL(id) {
		t.Errorf("client_id %q: want ≥ 22 random URL-safe characters", id)
	}
	got, err := store.GetClient(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Kind != auth.ClientDynamic || got.AuthMethod != auth.AuthMethodNone || got.SecretHash != "" ||
		got.Name != "Claude Code" || !got.CreatedAt.Equal(fixedNow) || !slices.Equal(got.Scopes, auth.AllScopes) ||
		!slices.Equal(got.GrantTypes, []string{auth.GrantAuthCode, auth.GrantRefresh}) || len(got.RedirectURIs) != 2 {
		t.Errorf("stored record %+v", got)
	}
}

func TestRegisterConfidential(t *testing.T) {
	t.Parallel()
	for _, method := range []string{auth.AuthMethodBasic, auth.AuthMethodPost} {
		t.Run(method, func(t *testing.T) {
			t.Parallel()
			store := newMemStore()
			rec := register(t, store, clients.RegistrationOptions{}, "application/json",
				`{"redirect_uris":["https://app.example.com/cb"],"token_endpoint_auth_method":"`+method+`","scope":"sandbox:exec sandbox:files:read sandbox:exec","grant_types":["authorization_code"]}`)
			if rec.Code != http.StatusCreated {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			resp := decodeBody(t, rec)
			secret, _ := resp["client_secret"].(string)
			if len(secret) < 43 || resp["client_secret_expires_at"] != float64(0) || resp["token_endpoint_auth_method"] != method {
				t.Fatalf("response %v", resp)
			}
			if resp["scope"] != "sandbox:exec sandbox:files:read" {
				t.Errorf("scope = %v", resp["scope"])
			}
			stored, err := store.GetClient(t.Context(), resp["client_id"].(string))
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := json.Marshal(stored)
			if strings.Contains(string(raw), secret) {
				t.Fatal("the plaintext secret is stored")
			}
			if !strings.HasPrefix(stored.SecretHash, "$2") || !clients.CheckSecret(stored.SecretHash, secret) {
				t.Errorf("SecretHash %q does not verify the issued secret", stored.SecretHash)
			}
			if clients.CheckSecret(stored.SecretHash, secret+"x") || clients.CheckSecret(stored.SecretHash, "") {
				t.Error("a wrong secret verifies")
			}
			if !slices.Equal(stored.GrantTypes, []string{auth.GrantAuthCode}) {
				t.Errorf("grants %v", stored.GrantTypes)
			}
		})
	}
}

func TestRegisterCleansName(t *testing.T) {
	t.Parallel()
	store := newMemStore()
	name := "Good\u202eliveD\x00\x1b[31m Client\u200b" + strings.Repeat("é", 150)
	rec := register(t, store, clients.RegistrationOptions{}, "application/json",
		`{"redirect_uris":["https://a.example/cb"],"client_name":`+mustJSON(t, name)+`}`)
	if rec.Code != http.StatusCreated {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	got := decodeBody(t, rec)["client_name"].(string)
	if want := "GoodliveD[31m Client" + strings.Repeat("é", 80); got != want {
		t.Errorf("client_name = %q, want %q", got, want)
	}
}

func TestRegisterStoreFailure(t *testing.T) {
	t.Parallel()
	store := newMemStore()
	store.err = errors.New("disk full")
	rec := register(t, store, clients.RegistrationOptions{}, "application/json",
		`{"redirect_uris":["https://a.example/cb"],"token_endpoint_auth_method":"client_secret_basic"}`)
	if rec.Code != http.StatusInternalServerError || strings.Contains(rec.Body.String(), "client_secret") ||
		strings.Contains(rec.Body.String(), "disk") {
		t.Errorf("status %d: %s", rec.Code, rec.Body)
	}
}

// TestRegisterRejects is the registration breakout table: every request
// that must not create a client, with the status, error code and a piece
// of the description that tells the developer what to fix.
func TestRegisterRejects(t *testing.T) {
	t.Parallel()
	redirect := func(uris ...string) string { return `{"redirect_uris":` + mustJSONs(uris) + `}` }
	with := func(member string) string { return `{"redirect_uris":["https://a.example/cb"],` + member + `}` }
	elevenURIs := make([]string, 11)
	for i := range elevenURIs {
		elevenURIs[i] = "https://a.example/cb" + string(rune('a'+i))
	}
	noLoopback := clients.RegistrationOptions{AllowLoopbackHTTP: new(false)}
	cases := []struct {
		name        string
		method      string
		contentType string
		body        string
		opts        clients.RegistrationOptions
		status      int
		code        string
		desc        string
	}{
		{name: "GET", method: http.MethodGet, status: 405, code: "invalid_request"},
		{name: "text/plain", contentType: "text/plain", body: redirect("https://a.example/cb"), status: 415, code: "invalid_client_metadata", desc: "application/json"},
		{name: "no content type", contentType: "-", body: redirect("https://a.example/cb"), status: 415, code: "invalid_client_metadata"},
		{name: "form", contentType: "application/x-www-form-urlencoded", body: "redirect_uris=x", status: 415, code: "invalid_client_metadata"},
		{name: "over 64 KiB", body: with(`"client_name":"` + strings.Repeat("a", 65<<10) + `"`), status: 413, code: "invalid_client_metadata", desc: "64 KiB"},
		{name: "not JSON", body: "redirect_uris: x", status: 400, code: "invalid_client_metadata", desc: "not a JSON object"},
		{name: "JSON array", body: `[]`, status: 400, code: "invalid_client_metadata", desc: "not a JSON object"},
		{name: "JSON null", body: `null`, status: 400, code: "invalid_client_metadata", desc: "not a JSON object"},
		{name: "trailing data", body: redirect("https://a.example/cb") + `{}`, status: 400, code: "invalid_client_metadata", desc: "not a JSON object"},
		{name: "no redirect_uris", body: `{"client_name":"x"}`, status: 400, code: "invalid_redirect_uri", desc: "redirect_uris is required"},
		{name: "empty redirect_uris", body: redirect(), status: 400, code: "invalid_redirect_uri", desc: "redirect_uris is required"},
		{name: "redirect_uris a string", body: `{"redirect_uris":"https://a.example/cb"}`, status: 400, code: "invalid_client_metadata", desc: "redirect_uris must be an array of strings"},
		{name: "too many redirect URIs", body: redirect(elevenURIs...), status: 400, code: "invalid_redirect_uri", desc: "at most 10"},
		{name: "MaxRedirectURIs", body: redirect("https://a.example/1", "https://a.example/2"), opts: clients.RegistrationOptions{MaxRedirectURIs: 1}, status: 400, code: "invalid_redirect_uri", desc: "at most 1"},
		{name: "javascript:", body: redirect("javascript:alert(1)"), status: 400, code: "invalid_redirect_uri", desc: "must use https"},
		{name: "data:", body: redirect("data:text/html,<script>alert(1)</script>"), status: 400, code: "invalid_redirect_uri", desc: "must use https"},
		{name: "plain http", body: redirect("http://app.example.com/cb"), status: 400, code: "invalid_redirect_uri", desc: "must use https"},
		{name: "custom scheme", body: redirect("com.example.app:/cb"), status: 400, code: "invalid_redirect_uri", desc: "must use https"},
		{name: "localhost lookalike", body: redirect("http://localhost.evil.example/cb"), status: 400, code: "invalid_redirect_uri", desc: "must use https"},
		{name: "loopback lookalike", body: redirect("http://127.0.0.1.nip.io/cb"), status: 400, code: "invalid_redirect_uri", desc: "must use https"},
		{name: "fragment", body: redirect("https://a.example/cb#x"), status: 400, code: "invalid_redirect_uri", desc: "fragment"},
		{name: "empty fragment", body: redirect("https://a.example/cb#"), status: 400, code: "invalid_redirect_uri", desc: "fragment"},
		{name: "userinfo", body: redirect("https://user:pw@a.example/cb"), status: 400, code: "invalid_redirect_uri", desc: "user name"},
		{name: "relative", body: redirect("/cb"), status: 400, code: "invalid_redirect_uri", desc: "must use https"},
		{name: "no host", body: redirect("https:///cb"), status: 400, code: "invalid_redirect_uri", desc: "with a host"},
		{name: "opaque", body: redirect("https:a.example/cb"), status: 400, code: "invalid_redirect_uri", desc: "with a host"},
		{name: "wildcard", body: redirect("https://*.example.com/cb"), status: 400, code: "invalid_redirect_uri"},
		{name: "space", body: redirect("https://a.example/c b"), status: 400, code: "invalid_redirect_uri", desc: "spaces"},
		{name: "loopback when off", body: redirect("http://127.0.0.1:8080/cb"), opts: noLoopback, status: 400, code: "invalid_redirect_uri", desc: "must use https"},
		{name: "private_key_jwt", body: with(`"token_endpoint_auth_method":"private_key_jwt"`), status: 400, code: "invalid_client_metadata", desc: "not supported"},
		{name: "client_secret_jwt", body: with(`"token_endpoint_auth_method":"client_secret_jwt"`), status: 400, code: "invalid_client_metadata", desc: "not supported"},
		{name: "client_credentials", body: with(`"grant_types":["client_credentials"]`), status: 400, code: "invalid_client_metadata", desc: "operator"},
		{name: "client_credentials even if allowed", body: with(`"grant_types":["client_credentials"]`), opts: clients.RegistrationOptions{AllowedGrants: []string{"authorization_code", "client_credentials"}}, status: 400, code: "invalid_client_metadata", desc: "operator"},
		{name: "implicit", body: with(`"grant_types":["implicit"]`), status: 400, code: "invalid_client_metadata", desc: `"implicit" is not available`},
		{name: "refresh not allowed", body: with(`"grant_types":["authorization_code","refresh_token"]`), opts: clients.RegistrationOptions{AllowedGrants: []string{"authorization_code"}}, status: 400, code: "invalid_client_metadata", desc: "refresh_token"},
		{name: "refresh_token alone", body: with(`"grant_types":["refresh_token"]`), status: 400, code: "invalid_client_metadata", desc: "must include"},
		{name: "device client with response type code", body: `{"grant_types":["urn:ietf:params:oauth:grant-type:device_code"],"response_types":["code"]}`, status: 400, code: "invalid_client_metadata", desc: "device-only client leaves response_types out"},
		{name: "device grant not allowed", body: with(`"grant_types":["urn:ietf:params:oauth:grant-type:device_code"]`), opts: clients.RegistrationOptions{AllowedGrants: []string{"authorization_code"}}, status: 400, code: "invalid_client_metadata", desc: "is not available"},
		{name: "code flow without redirect_uris", body: `{"grant_types":["authorization_code","urn:ietf:params:oauth:grant-type:device_code"]}`, status: 400, code: "invalid_redirect_uri", desc: "redirect_uris is required"},
		{name: "response type token", body: with(`"response_types":["token"]`), status: 400, code: "invalid_client_metadata", desc: "response type"},
		{name: "unknown scope", body: with(`"scope":"sandbox:exec admin"`), status: 400, code: "invalid_client_metadata", desc: `scope "admin" is not offered`},
		{name: "scope outside AllowedScopes", body: with(`"scope":"sandbox:exec"`), opts: clients.RegistrationOptions{AllowedScopes: []string{auth.ScopeFilesRead}}, status: 400, code: "invalid_client_metadata", desc: "sandbox:files:read"},
		{name: "scope a list", body: with(`"scope":["sandbox:exec"]`), status: 400, code: "invalid_client_metadata", desc: "scope must be"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			store := newMemStore()
			var rec *httptest.ResponseRecorder
			switch {
			case tc.method != "":
				req := httptest.NewRequest(tc.method, "/register", nil)
				rec = httptest.NewRecorder()
				clients.RegistrationHandler(store, tc.opts).ServeHTTP(rec, req)
				if rec.Header().Get("Allow") != http.MethodPost {
					t.Errorf("Allow = %q", rec.Header().Get("Allow"))
				}
			case tc.contentType == "-":
				rec = register(t, store, tc.opts, "", tc.body)
			case tc.contentType == "":
				rec = register(t, store, tc.opts, "application/json", tc.body)
			default:
				rec = register(t, store, tc.opts, tc.contentType, tc.body)
			}
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
			resp := decodeBody(t, rec)
			if resp["error"] != tc.code {
				t.Errorf("error = %v, want %s", resp["error"], tc.code)
			}
			if desc, _ := resp["error_description"].(string); desc == "" || !strings.Contains(desc, tc.desc) {
				t.Errorf("error_description = %q, want it to mention %q", desc, tc.desc)
			}
			if store.len() != 0 {
				t.Error("a client was stored")
			}
		})
	}
}

func TestRegisterAcceptsNativeRedirects(t *testing.T) {
	t.Parallel()
	for _, uri := range []string{"http://127.0.0.1/cb", "http://127.0.0.1:53682/cb", "http://[::1]:8080/cb", "http://localhost:3000/callback", "https://app.example.com:8443/cb?x=1"} {
		rec := register(t, newMemStore(), clients.RegistrationOptions{}, "application/json", `{"redirect_uris":["`+uri+`"]}`)
		if rec.Code != http.StatusCreated {
			t.Errorf("%s: status %d: %s", uri, rec.Code, rec.Body)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustJSONs(ss []string) string {
	if ss == nil {
		ss = []string{}
	}
	b, _ := json.Marshal(ss)
	return string(b)
}
