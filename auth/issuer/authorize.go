package issuer

import (
	"errors"
	"net/http"
	"net/url"
	"slices"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/sandgate/sandgate/auth"
)

// singleParams may appear at most once (RFC 6749 §3.1). A repeated
// redirect_uri or client_id could otherwise be read one way here and
// another way downstream.
var singleParams = []string{"client_id", "redirect_uri", "response_type", "response_mode",
	"state", "scope", "code_challenge", "code_challenge_method", "nonce", "prompt"}

// authorize is the authorization endpoint. It uses zitadel to parse the
// request and store it, and applies our own policy where zitadel's is
// weaker or absent: exact redirect URIs, PKCE S256 for every client, the
// resource parameter, explicit scopes, and iss on every redirect.
//
// Until the redirect URI is known to be registered, errors are shown to
// the user and never redirected: redirecting to an unchecked URI would
// make this an open redirector.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		w.Header().Set("Allow", "GET, POST")
		s.problem(w, r, http.StatusMethodNotAllowed, "Use GET.")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	req, err := op.ParseAuthorizeRequest(r, s.provider.Decoder())
	if err != nil {
		s.problem(w, r, http.StatusBadRequest, "The application sent a malformed sign-in request.")
		return
	}
	for _, p := range singleParams {
		if len(r.Form[p]) > 1 {
			s.problem(w, r, http.StatusBadRequest, "The application sent the parameter "+p+" more than once.")
			return
		}
	}
	if req.ClientID == "" || req.RedirectURI == "" {
		s.problem(w, r, http.StatusBadRequest, "The application's sign-in request lacks client_id or redirect_uri.")
		return
	}
	rec, err := s.st.clients.lookup(r.Context(), req.ClientID)
	if err != nil {
		s.log.InfoContext(r.Context(), "authorize: unknown client", "client_id", req.ClientID, "error", err)
		msg := "This application is not registered with this server."
		if !errors.Is(err, auth.ErrClientNotFound) {
			msg = "This application's registration could not be loaded."
		}
		s.problem(w, r, http.StatusBadRequest, msg)
		return
	}
	if err := checkRedirectURI(rec.RedirectURIs, req.RedirectURI); err != nil {
		s.log.InfoContext(r.Context(), "authorize: redirect_uri refused", "client_id", rec.ID, "error", err)
		s.problem(w, r, http.StatusBadRequest, "The application asked to return to an address it did not register. Sign-in stopped.")
		return
	}
	// From here on, errors go back to the client.
	resource, e := s.validateAuthorize(req, rec, r.Form)
	if e != nil {
		s.redirectError(w, r, req.RedirectURI, req.State, e, http.StatusFound)
		return
	}
	ar, err := s.st.CreateAuthRequest(withResource(r.Context(), resource), req, "")
	if err != nil {
		s.log.WarnContext(r.Context(), "authorize: store request", "error", err)
		s.redirectError(w, r, req.RedirectURI, req.State, oidc.ErrServerError().WithDescription("try again later"), http.StatusFound)
		return
	}
	http.Redirect(w, r, s.loginURL(ar.GetID()), http.StatusFound)
}

// validateAuthorize checks everything the client may be told about. It
// narrows req.Scopes to the decided scopes and returns the resource.
func (s *Server) validateAuthorize(req *oidc.AuthRequest, rec auth.ClientRecord, form url.Values) (string, *oidc.Error) {
	if req.RequestParam != "" || form.Has("request_uri") {
		return "", oidc.ErrRequestNotSupported()
	}
	if req.ResponseType != oidc.ResponseTypeCode {
		return "", &oidc.Error{ErrorType: "unsupported_response_type", Description: "only response_type=code is supported"}
	}
	if req.ResponseMode != "" && req.ResponseMode != oidc.ResponseModeQuery {
		return "", oidc.ErrInvalidRequest().WithDescription("only response_mode=query is supported")
	}
	if !hasGrant(rec, auth.GrantAuthCode) {
		return "", oidc.ErrUnauthorizedClient().WithDescription("client is not registered for the authorization_code grant")
	}
	if e := checkPKCE(req.CodeChallenge, req.CodeChallengeMethod); e != nil {
		return "", e
	}
	resource, e := s.st.resources.fromForm(form)
	if e != nil {
		return "", e
	}
	scopes, e := s.st.authorizeScopes(rec, req.Scopes)
	if e != nil {
		return "", e
	}
	// There are no sign-in sessions: every authorization asks for the
	// password, so prompt=none can never be satisfied.
	if slices.Contains(req.Prompt, oidc.PromptNone) {
		return "", oidc.ErrLoginRequired().WithDescription("this server always asks the user to sign in")
	}
	req.Scopes = scopes
	return s.st.resources.orDefault(resource), nil
}
