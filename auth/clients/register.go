package clients

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/sandgate/sandgate/auth"
)

const (
	defaultMaxRedirectURIs = 10
	// maxRequestBytes caps a registration request; real ones are < 2 KiB.
	maxRequestBytes = 64 << 10
)

// RegistrationOptions configures RegistrationHandler. The zero value is
// usable.
type RegistrationOptions struct {
	// AllowedScopes are the gateway scopes a registered client may ask
	// for; default auth.AllScopes. The protocol scopes (openid,
	// offline_access) are always accepted: the issuer advertises them.
	AllowedScopes []string
	// AllowedGrants are the grant types a client may register; default
	// authorization_code, refresh_token and the device code grant. Only
	// those three are ever honoured, and authorization_code is always
	// allowed: client_credentials clients hold a secret that grants tokens
	// without a user, so only an operator may create them.
	AllowedGrants []string
	// MaxRedirectURIs caps redirect_uris; default 10.
	MaxRedirectURIs int
	// AllowLoopbackHTTP admits http redirect URIs on 127.0.0.1, [::1]
	// and localhost, where RFC 8252 native apps listen. nil means the
	// default, true (a plain bool could not default to true); turn it off
	// with new(false).
	AllowLoopbackHTTP *bool
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Logger receives store failures; default discards.
	Logger *slog.Logger
}

func (o RegistrationOptions) withDefaults() RegistrationOptions {
	if o.AllowedScopes == nil {
		o.AllowedScopes = auth.AllScopes
	}
	if o.AllowedGrants == nil {
		o.AllowedGrants = []string{auth.GrantAuthCode, auth.GrantRefresh, auth.GrantDeviceCode}
	}
	o.AllowedGrants = slices.DeleteFunc(slices.Clone(o.AllowedGrants), func(g string) bool {
		return g != auth.GrantAuthCode && g != auth.GrantRefresh && g != auth.GrantDeviceCode
	})
	if !slices.Contains(o.AllowedGrants, auth.GrantAuthCode) {
		o.AllowedGrants = slices.Insert(o.AllowedGrants, 0, auth.GrantAuthCode)
	}
	if o.MaxRedirectURIs <= 0 {
		o.MaxRedirectURIs = defaultMaxRedirectURIs
	}
	if o.AllowLoopbackHTTP == nil {
		o.AllowLoopbackHTTP = new(true)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// registration is the RFC 7591 §3.2.1 response.
type registration struct {
	ClientID              string   `json:"client_id"`
	ClientSecret          string   `json:"client_secret,omitempty"`
	ClientIDIssuedAt      int64    `json:"client_id_issued_at"`
	ClientSecretExpiresAt int64    `json:"client_secret_expires_at"`
	RedirectURIs          []string `json:"redirect_uris,omitempty"`
	GrantTypes            []string `json:"grant_types"`
	ResponseTypes         []string `json:"response_types"`
	AuthMethod            string   `json:"token_endpoint_auth_method"`
	ClientName            string   `json:"client_name,omitempty"`
	ClientURI             string   `json:"client_uri,omitempty"`
	Scope                 string   `json:"scope"`
}

// RegistrationHandler serves POST /register (RFC 7591). It creates a
// public client (token_endpoint_auth_method "none", the default) or, when
// client_secret_basic or client_secret_post is asked for, a confidential
// one whose secret is in the response only: the store keeps its bcrypt
// hash. Refusals are 400 invalid_redirect_uri or invalid_client_metadata
// with an error_description saying what to fix.
func RegistrationHandler(store auth.ClientStore, opts RegistrationOptions) http.Handler {
	opts = opts.withDefaults()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeError(w, http.StatusMethodNotAllowed, "invalid_request", "use POST")
			return
		}
		if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
			writeError(w, http.StatusUnsupportedMediaType, "invalid_client_metadata", "send the registration request as Content-Type: application/json")
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBytes))
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				writeError(w, http.StatusRequestEntityTooLarge, "invalid_client_metadata", "registration request is larger than 64 KiB")
				return
			}
			writeError(w, http.StatusBadRequest, "invalid_client_metadata", "could not read the request body")
			return
		}
		rec, secret, err := newClient(body, opts)
		if err != nil {
			writeMetadataError(w, err)
			return
		}
		if err := store.PutClient(r.Context(), rec); err != nil {
			opts.Logger.ErrorContext(r.Context(), "store registered client", "client_id", rec.ID, "error", err)
			writeError(w, http.StatusInternalServerError, "server_error", "the client could not be stored; try again later")
			return
		}
		writeJSON(w, http.StatusCreated, registration{
			ClientID:         rec.ID,
			ClientSecret:     secret,
			ClientIDIssuedAt: rec.CreatedAt.Unix(),
			RedirectURIs:     rec.RedirectURIs,
			GrantTypes:       rec.GrantTypes,
			ResponseTypes:    responseTypes(rec.GrantTypes),
			AuthMethod:       rec.AuthMethod,
			ClientName:       rec.Name,
			ClientURI:        rec.ClientURI,
			Scope:            strings.Join(rec.Scopes, " "),
		})
	})
}

// newClient checks a registration request and makes the record, and the
// plaintext secret for a confidential client.
func newClient(body []byte, opts RegistrationOptions) (auth.ClientRecord, string, error) {
	req, _, err := decodeMetadata(body, "request")
	if err != nil {
		return auth.ClientRecord{}, "", err
	}
	method := req.AuthMethod
	switch method {
	case "":
		method = auth.AuthMethodNone
	case auth.AuthMethodNone, auth.AuthMethodBasic, auth.AuthMethodPost:
	default:
		return auth.ClientRecord{}, "", invalidf("token_endpoint_auth_method %q is not supported; use none, client_secret_basic or client_secret_post", method)
	}
	if slices.Contains(req.GrantTypes, auth.GrantClientCreds) {
		return auth.ClientRecord{}, "", invalidf("grant type client_credentials cannot be registered here; ask an operator to create the client")
	}
	grants, redirects, err := checkGrants(req, opts)
	if err != nil {
		return auth.ClientRecord{}, "", err
	}
	scopes, err := parseScope(req.Scope, opts.AllowedScopes)
	if err != nil {
		return auth.ClientRecord{}, "", err
	}
	rec := auth.ClientRecord{
		ID:           NewClientID(),
		Kind:         auth.ClientDynamic,
		Name:         cleanName(req.ClientName),
		RedirectURIs: redirects,
		GrantTypes:   grants,
		AuthMethod:   method,
		Scopes:       scopes,
		CreatedAt:    opts.Now().UTC().Truncate(time.Second),
		ClientURI:    cleanClientURI(req.ClientURI),
	}
	var secret string
	if method != auth.AuthMethodNone {
		secret = newSecret()
		if rec.SecretHash, err = HashSecret(secret); err != nil {
			return auth.ClientRecord{}, "", err
		}
	}
	return rec, secret, nil
}

// checkGrants returns the grant types and redirect URIs of a
// registration. Redirect URIs are required with authorization_code and
// optional for a device-only client, which has nowhere to be sent back to.
func checkGrants(req metadata, opts RegistrationOptions) (grants, redirects []string, err error) {
	if err := checkFlows(req.GrantTypes, req.ResponseTypes, opts.AllowedGrants); err != nil {
		return nil, nil, err
	}
	grants = req.GrantTypes
	if len(grants) == 0 {
		// RFC 7591 defaults to authorization_code alone; MCP clients
		// expect refresh tokens too, and the response tells them. The
		// device grant is registered only when asked for.
		grants = slices.DeleteFunc(slices.Clone(opts.AllowedGrants), func(g string) bool { return g == auth.GrantDeviceCode })
	}
	grants = dedupe(grants)
	if !slices.Contains(grants, auth.GrantAuthCode) && len(req.RedirectURIs) == 0 {
		return grants, nil, nil
	}
	redirects, err = checkRedirectURIs(req.RedirectURIs, opts.MaxRedirectURIs, *opts.AllowLoopbackHTTP)
	return grants, redirects, err
}

// responseTypes are the response types that go with grants: "code" for
// the authorization code grant, none for a device-only client.
func responseTypes(grants []string) []string {
	if slices.Contains(grants, auth.GrantAuthCode) {
		return []string{"code"}
	}
	return []string{}
}

// dedupe returns list without repeats, in first-seen order.
func dedupe(list []string) []string {
	var out []string
	for _, s := range list {
		out = appendNew(out, s)
	}
	return out
}

func writeMetadataError(w http.ResponseWriter, err error) {
	var me *metadataError
	if !errors.As(err, &me) {
		writeError(w, http.StatusInternalServerError, "server_error", "the client could not be created; try again later")
		return
	}
	code := "invalid_client_metadata"
	if me.redirect {
		code = "invalid_redirect_uri"
	}
	writeError(w, http.StatusBadRequest, code, me.msg)
}

func writeError(w http.ResponseWriter, status int, code, description string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": description})
}

// writeJSON sends v with no-store caching: a registration response holds
// a client secret (RFC 7591 §3.2.1).
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
