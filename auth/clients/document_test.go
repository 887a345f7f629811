package clients_test

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/clients"
)

const fuzzClientID = "https://app.example.com/client.json"

// FuzzDocument checks that a hostile document never panics the parser
// and that whatever it accepts is safe to act on: the right client_id, a
// public client, https or loopback-http redirect URIs, a clean name.
func FuzzDocument(f *testing.F) {
	for _, s := range []string{
		strings.ReplaceAll(goodDoc, "{{ID}}", fuzzClientID),
		`{"client_id":"` + fuzzClientID + `","redirect_uris":["javascript:x"]}`,
		`{"client_id":"` + fuzzClientID + `","redirect_uris":["https://a.example/cb"],"client_secret":"x"}`,
		`{"client_id":"` + fuzzClientID + `","redirect_uris":["https://a.example/cb"],"client_name":"\u202e\u0000x"}`,
		`[]`, `null`, `{}`, `{"client_id":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		rec, err := clients.ParseDocument(body, fuzzClientID)
		if err != nil {
			if !errors.Is(err, auth.ErrInvalidClientMetadata) {
				t.Fatalf("error %v does not wrap ErrInvalidClientMetadata", err)
			}
			return
		}
		if rec.ID != fuzzClientID || rec.AuthMethod != auth.AuthMethodNone || rec.SecretHash != "" || rec.Kind != auth.ClientMetadata {
			t.Fatalf("accepted record %+v", rec)
		}
		if len(rec.RedirectURIs) == 0 {
			t.Fatal("accepted a document without redirect URIs")
		}
		for _, r := range rec.RedirectURIs {
			u, err := url.Parse(r)
			if err != nil || u.Fragment != "" || u.User != nil ||
				!(u.Scheme == "https" && u.Host != "" || u.Scheme == "http" && isLoopbackHost(u.Hostname())) {
				t.Fatalf("accepted redirect URI %q", r)
			}
		}
		if !utf8.ValidString(rec.Name) || utf8.RuneCountInString(rec.Name) > 100 ||
			strings.IndexFunc(rec.Name, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }) >= 0 {
			t.Fatalf("accepted name %q", rec.Name)
		}
	})
}

func isLoopbackHost(h string) bool {
	return h == "127.0.0.1" || h == "::1" || strings.EqualFold(h, "localhost")
}
