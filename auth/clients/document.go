package clients

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/sandgate/sandgate/auth"
)

// maxNameRunes caps client_name: it is shown on the consent page, where a
// long name could push the real question off screen.
const maxNameRunes = 100

// metadataError is a refusal of client metadata. Its message is written
// for the client's developer (it becomes error_description); redirect
// marks the RFC 7591 invalid_redirect_uri case.
type metadataError struct {
	msg       string
	redirect  bool
	forbidden bool
}

func (e *metadataError) Error() string { return e.msg }

func (e *metadataError) Unwrap() []error {
	if e.forbidden {
		return []error{auth.ErrInvalidClientMetadata, ErrForbiddenAddress}
	}
	return []error{auth.ErrInvalidClientMetadata}
}

func invalidf(format string, a ...any) error {
	return &metadataError{msg: fmt.Sprintf(format, a...)}
}

func redirectf(format string, a ...any) error {
	return &metadataError{msg: fmt.Sprintf(format, a...), redirect: true}
}

func forbiddenf(format string, a ...any) error {
	return &metadataError{msg: fmt.Sprintf(format, a...), forbidden: true}
}

// metadata is the part of a client ID metadata document or a
// registration request that we act on; other members are ignored, as the
// draft and RFC 7591 require.
type metadata struct {
	ClientID      string
	ClientName    string
	ClientURI     string
	RedirectURIs  []string
	GrantTypes    []string
	ResponseTypes []string
	AuthMethod    string
	Scope         string
}

// parseDocument checks a fetched document against the URL it came from
// and turns it into a client record.
func parseDocument(body []byte, clientID string, scopes []string, now time.Time) (auth.ClientRecord, error) {
	doc, members, err := decodeMetadata(body, "document")
	if err != nil {
		return auth.ClientRecord{}, err
	}
	if _, ok := members["client_secret"]; ok {
		return auth.ClientRecord{}, invalidf("document must not contain client_secret: it is public, so it cannot hold a secret")
	}
	if doc.ClientID != clientID {
		return auth.ClientRecord{}, invalidf("document client_id %q does not equal the URL it was fetched from, %q", doc.ClientID, clientID)
	}
	switch doc.AuthMethod {
	case "", auth.AuthMethodNone:
	case auth.AuthMethodBasic, auth.AuthMethodPost, "client_secret_jwt":
		return auth.ClientRecord{}, invalidf("token_endpoint_auth_method %q needs a shared secret, which a public document cannot carry; use \"none\"", doc.AuthMethod)
	case "private_key_jwt":
		return auth.ClientRecord{}, invalidf("token_endpoint_auth_method \"private_key_jwt\" is not supported yet; use \"none\"")
	default:
		return auth.ClientRecord{}, invalidf("token_endpoint_auth_method %q is not supported; use \"none\"", doc.AuthMethod)
	}
	if err := checkFlows(doc.GrantTypes, doc.ResponseTypes, []string{auth.GrantAuthCode, auth.GrantRefresh}); err != nil {
		return auth.ClientRecord{}, err
	}
	redirects, err := checkRedirectURIs(doc.RedirectURIs, defaultMaxRedirectURIs, true)
	if err != nil {
		return auth.ClientRecord{}, err
	}
	granted, err := parseScope(doc.Scope, scopes)
	if err != nil {
		return auth.ClientRecord{}, err
	}
	return auth.ClientRecord{
		ID:           clientID,
		Kind:         auth.ClientMetadata,
		Name:         cleanName(doc.ClientName),
		RedirectURIs: redirects,
		GrantTypes:   []string{auth.GrantAuthCode, auth.GrantRefresh},
		AuthMethod:   auth.AuthMethodNone,
		Scopes:       granted,
		CreatedAt:    now,
		MetadataURL:  clientID,
		FetchedAt:    now,
		ClientURI:    cleanClientURI(doc.ClientURI),
	}, nil
}

// decodeMetadata reads the members of a JSON object by their exact names;
// what names the body in errors ("document", "request"). Decoding into a
// tagged struct would also take "Client_ID" for client_id, since
// encoding/json matches names case-insensitively, and a client's own
// tooling would read such a document differently from us.
func decodeMetadata(body []byte, what string) (metadata, map[string]json.RawMessage, error) {
	var members map[string]json.RawMessage
	if err := decodeOne(body, &members); err != nil || members == nil {
		return metadata{}, nil, invalidf("%s is not a JSON object", what)
	}
	var doc metadata
	fields := []struct {
		name string
		dst  any
		want string
	}{
		{"client_id", &doc.ClientID, "a string"},
		{"client_name", &doc.ClientName, "a string"},
		{"client_uri", &doc.ClientURI, "a string"},
		{"redirect_uris", &doc.RedirectURIs, "an array of strings"},
		{"grant_types", &doc.GrantTypes, "an array of strings"},
		{"response_types", &doc.ResponseTypes, "an array of strings"},
		{"token_endpoint_auth_method", &doc.AuthMethod, "a string"},
		{"scope", &doc.Scope, "a space-separated string"},
	}
	for _, f := range fields {
		raw, ok := members[f.name]
		if !ok {
			continue
		}
		if err := json.Unmarshal(raw, f.dst); err != nil || bytes.Equal(raw, []byte("null")) {
			return metadata{}, nil, invalidf("%s member %s must be %s", what, f.name, f.want)
		}
	}
	return doc, members, nil
}

// decodeOne decodes exactly one JSON value; trailing data is an error so
// that two parsers can never disagree about what a document says.
func decodeOne(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON value")
	}
	return nil
}

// checkFlows checks requested grant and response types against allowed.
// A client needs a grant that starts a sign-in (the code flow or the
// device flow); response_types may only be ["code"], and only with the
// code flow.
func checkFlows(grants, responses, allowed []string) error {
	for _, g := range grants {
		if !slices.Contains(allowed, g) {
			return invalidf("grant type %q is not available; use %s", g, strings.Join(allowed, " and/or "))
		}
	}
	code := len(grants) == 0 || slices.Contains(grants, auth.GrantAuthCode)
	if !code && !slices.Contains(grants, auth.GrantDeviceCode) {
		if slices.Contains(allowed, auth.GrantDeviceCode) {
			return invalidf("grant_types must include %q or %q", auth.GrantAuthCode, auth.GrantDeviceCode)
		}
		return invalidf("grant_types must include %q", auth.GrantAuthCode)
	}
	for _, r := range responses {
		if r != "code" {
			return invalidf("response type %q is not supported; use [\"code\"]", r)
		}
		if !code {
			return invalidf("response type \"code\" needs grant type %q; a device-only client leaves response_types out", auth.GrantAuthCode)
		}
	}
	return nil
}

// checkRedirectURIs requires 1 to max valid redirect URIs and drops
// duplicates.
func checkRedirectURIs(uris []string, max int, allowLoopbackHTTP bool) ([]string, error) {
	if len(uris) == 0 {
		return nil, redirectf("redirect_uris is required: list at least one redirect URI")
	}
	if len(uris) > max {
		return nil, redirectf("too many redirect_uris: %d, at most %d", len(uris), max)
	}
	out := make([]string, 0, len(uris))
	for _, u := range uris {
		if err := checkRedirectURI(u, allowLoopbackHTTP); err != nil {
			return nil, err
		}
		if !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	return out, nil
}

// parseScope turns a space-separated scope request into the scopes a
// client may be granted: gateway scopes from allowed, and the protocol
// scopes (openid, offline_access) the authorization server advertises
// too. Naming no gateway scope means every allowed one, as an empty
// request does: "offline_access" alone says nothing about the gateway. An
// unknown scope is an error rather than silently dropped, so the developer
// learns the names.
func parseScope(scope string, allowed []string) ([]string, error) {
	var gateway, protocol []string
	for _, s := range strings.Fields(scope) {
		switch {
		case auth.IsProtocolScope(s):
			protocol = appendNew(protocol, s)
		case slices.Contains(allowed, s):
			gateway = appendNew(gateway, s)
		default:
			offered := append(slices.Clone(allowed), auth.ProtocolScopes...)
			return nil, invalidf("scope %q is not offered; choose from %s", s, strings.Join(offered, " "))
		}
	}
	if len(gateway) == 0 {
		gateway = slices.Clone(allowed)
	}
	return append(gateway, protocol...), nil
}

// appendNew appends s unless list holds it already.
func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// cleanName makes client_name safe to show as text on the consent page:
// valid UTF-8, no control characters, no format characters (bidi
// overrides and zero-width characters can make "Evil" read as "Trusted"),
// at most maxNameRunes runes.
func cleanName(name string) string {
	name = strings.ToValidUTF8(name, "")
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, name)
	name = strings.TrimSpace(name)
	if utf8.RuneCountInString(name) > maxNameRunes {
		name = strings.TrimSpace(string([]rune(name)[:maxNameRunes]))
	}
	return name
}

// cleanClientURI keeps client_uri only if it is an https URL: it is
// cosmetic, so a bad one is dropped rather than failing the client.
func cleanClientURI(uri string) string {
	if uri == "" || checkRedirectURI(uri, false) != nil || len(uri) > 2048 {
		return ""
	}
	return uri
}
