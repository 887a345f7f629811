package issuer

import (
	"net/http"

	httphelper "github.com/zitadel/oidc/v3/pkg/http"
	"github.com/zitadel/oidc/v3/pkg/oidc"

	"github.com/sandgate/sandgate/auth"
)

// Paths served at the origin's root. /authorize, /token and /register are
// also the defaults MCP clients fall back to without metadata.
const (
	pathAuthorize   = "/authorize"
	pathToken       = "/token"
	pathRevoke      = "/revoke"
	pathJWKS        = "/jwks"
	pathLogin       = "/login"
	pathConsent     = "/consent"
	pathRegister    = "/register"
	pathDeviceAuthz = "/device_authorization"
	pathDevice      = "/device"
	pathASMetadata  = "/.well-known/oauth-authorization-server"
	pathOIDCConfig  = "/.well-known/openid-configuration"
	metadataMaxAge  = "public, max-age=300"
	corsMaxAgeSecs  = "86400"
	corsAllowHeader = "Authorization, Content-Type, MCP-Protocol-Version"
)

// metadata is the RFC 8414 authorization server metadata. We write our
// own rather than zitadel's discovery document, which advertises what we
// deliberately do not serve (implicit, token exchange, JWT bearer,
// userinfo, introspection) and lacks the fields MCP clients look for.
// The same document is served as openid-configuration.
type metadata struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	JWKSURI                           string   `json:"jwks_uri"`
	RegistrationEndpoint              string   `json:"registration_endpoint,omitempty"`
	DeviceAuthorizationEndpoint       string   `json:"device_authorization_endpoint"`
	RevocationEndpoint                string   `json:"revocation_endpoint"`
	ScopesSupported                   []string `json:"scopes_supported"`
	ResponseTypesSupported            []string `json:"response_types_supported"`
	ResponseModesSupported            []string `json:"response_modes_supported"`
	GrantTypesSupported               []string `json:"grant_types_supported"`
	TokenEndpointAuthMethods          []string `json:"token_endpoint_auth_methods_supported"`
	RevocationEndpointAuthMethods     []string `json:"revocation_endpoint_auth_methods_supported"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported"`
	IssParameterSupported             bool     `json:"authorization_response_iss_parameter_supported"`
	ClientIDMetadataDocumentSupported bool     `json:"client_id_metadata_document_supported,omitempty"`
	SubjectTypesSupported             []string `json:"subject_types_supported"`
	IDTokenSigningAlgValuesSupported  []string `json:"id_token_signing_alg_values_supported"`
}

func (s *Server) buildMetadata() metadata {
	iss := s.cfg.Issuer
	authMethods := []string{auth.AuthMethodNone, auth.AuthMethodBasic, auth.AuthMethodPost}
	m := metadata{
		Issuer:                            iss,
		AuthorizationEndpoint:             iss + pathAuthorize,
		TokenEndpoint:                     iss + pathToken,
		JWKSURI:                           iss + pathJWKS,
		RevocationEndpoint:                iss + pathRevoke,
		DeviceAuthorizationEndpoint:       iss + pathDeviceAuthz,
		ScopesSupported:                   append(append([]string{}, s.cfg.Scopes...), oidc.ScopeOpenID, oidc.ScopeOfflineAccess),
		ResponseTypesSupported:            []string{string(oidc.ResponseTypeCode)},
		ResponseModesSupported:            []string{string(oidc.ResponseModeQuery)},
		GrantTypesSupported:               []string{auth.GrantAuthCode, auth.GrantRefresh, auth.GrantClientCreds, auth.GrantDeviceCode},
		TokenEndpointAuthMethods:          authMethods,
		RevocationEndpointAuthMethods:     authMethods,
		CodeChallengeMethodsSupported:     []string{string(oidc.CodeChallengeMethodS256)},
		IssParameterSupported:             true,
		ClientIDMetadataDocumentSupported: s.cfg.ClientFetcher != nil,
		SubjectTypesSupported:             []string{"public"},
		IDTokenSigningAlgValuesSupported:  []string{string(signingAlg)},
	}
	if s.cfg.RegisterHandler != nil {
		m.RegistrationEndpoint = iss + pathRegister
	}
	return m
}

// serveMetadata serves the metadata document.
func (s *Server) serveMetadata(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET")
		http.Error(w, "use GET", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Cache-Control", metadataMaxAge)
	httphelper.MarshalJSON(w, s.meta)
}

// cors lets browser-based MCP clients (e.g. an inspector on another
// origin) read metadata and keys and call /token, /register and /revoke.
// These endpoints take no cookies, so any origin is safe; the login and
// consent pages get no CORS at all.
func cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		h.Add("Vary", "Origin")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
			h.Set("Access-Control-Allow-Headers", corsAllowHeader)
			h.Set("Access-Control-Max-Age", corsMaxAgeSecs)
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}
