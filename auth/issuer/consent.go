package issuer

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/sandgate/sandgate/auth"
)

// consentPage is what the consent template shows. Every string may come
// from the client; the template escapes them all and links none.
type consentPage struct {
	RequestID   string
	CSRF        string
	User        string
	ClientName  string
	ClientID    string
	ClientURI   string
	Vouch       string // who stands behind the client's identity
	RedirectURI string
	UserCode    string // a device sign-in: the code the device shows
	Resource    string
	Scopes      []string // in words
}

// consent shows what the application asks for (GET) and takes the
// answer (POST). Both require the browser that signed in.
func (s *Server) consent(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		s.consentForm(w, r)
	case http.MethodPost:
		s.consentSubmit(w, r)
	default:
		w.Header().Set("Allow", "GET, POST")
		s.problem(w, r, http.StatusMethodNotAllowed, "Use the consent form.")
	}
}

func (s *Server) consentForm(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	ar, err := s.st.reqs.get(id)
	if err != nil {
		s.problem(w, r, http.StatusBadRequest, msgExpired)
		return
	}
	if ar.Subject == "" {
		http.Redirect(w, r, s.loginURL(id), http.StatusSeeOther)
		return
	}
	cookie, ok := s.csrf.value(r)
	if !ok || browserID(cookie) != ar.Browser {
		s.problem(w, r, http.StatusForbidden, msgForged)
		return
	}
	page := consentPage{
		RequestID:   id,
		CSRF:        s.csrf.token(cookie, id, purposeConsent),
		User:        ar.Subject,
		ClientID:    ar.ClientID,
		RedirectURI: ar.RedirectURI,
		UserCode:    ar.UserCode,
		Resource:    ar.Resource,
	}
	for _, sc := range ar.Scopes {
		page.Scopes = append(page.Scopes, describeScope(sc))
	}
	if rec, err := s.st.clients.lookup(r.Context(), ar.ClientID); err == nil {
		page.ClientName, page.ClientURI, page.Vouch = rec.Name, rec.ClientURI, vouch(rec)
	}
	if page.ClientName == "" {
		page.ClientName = ar.ClientID
	}
	s.render(w, http.StatusOK, consentTemplate, page)
}

// vouch says who stands behind a client's name: only the operator's own
// clients are known; a self-registered name proves nothing.
func vouch(rec auth.ClientRecord) string {
	switch rec.Kind {
	case auth.ClientStatic:
		return "Created by the operator of this server."
	case auth.ClientMetadata:
		if u, err := url.Parse(rec.ID); err == nil {
			return "Its name is published by " + u.Host + "; this server has not checked it."
		}
	}
	return "The application registered itself; this server has not checked its name."
}

// consentSubmit approves or denies. Approval mints the code through
// zitadel (op.CreateAuthRequestCode) and redirects with code, state and
// iss; denial redirects with access_denied.
func (s *Server) consentSubmit(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		s.problem(w, r, http.StatusBadRequest, "The consent form could not be read.")
		return
	}
	id := r.PostForm.Get("id")
	cookie, ok := s.csrf.check(r, id, purposeConsent)
	ar, err := s.st.reqs.get(id)
	if err != nil {
		s.problem(w, r, http.StatusBadRequest, msgExpired)
		return
	}
	if !ok || ar.Subject == "" || browserID(cookie) != ar.Browser {
		s.log.WarnContext(r.Context(), "consent: CSRF check failed", "auth_request_id", id)
		s.problem(w, r, http.StatusForbidden, msgForged)
		return
	}
	if ar.DeviceID != "" {
		s.deviceAnswer(w, r, ar, r.PostForm.Get("action") == "approve")
		return
	}
	if r.PostForm.Get("action") != "approve" {
		s.st.reqs.remove(id)
		s.log.InfoContext(r.Context(), "consent denied", "user", ar.Subject, "client_id", ar.ClientID)
		s.redirectError(w, r, ar.RedirectURI, ar.State,
			oidc.ErrAccessDenied().WithDescription("the user denied the request"), http.StatusSeeOther)
		return
	}
	ar, err = s.st.reqs.update(id, func(a *authRequest) error {
		if a.Approved {
			return errors.New("already answered")
		}
		a.Approved = true
		return nil
	})
	if err != nil {
		s.problem(w, r, http.StatusBadRequest, msgExpired)
		return
	}
	code, err := op.CreateAuthRequestCode(r.Context(), ar, s.st, s.provider.Crypto())
	if err != nil {
		s.log.ErrorContext(r.Context(), "consent: create code", "error", err)
		s.redirectError(w, r, ar.RedirectURI, ar.State, oidc.ErrServerError().WithDescription("try again"), http.StatusSeeOther)
		return
	}
	s.log.InfoContext(r.Context(), "consent approved", "user", ar.Subject, "client_id", ar.ClientID, "scopes", ar.Scopes)
	params := url.Values{"code": {code}}
	if ar.State != "" {
		params.Set("state", ar.State)
	}
	s.redirectToClient(w, r, ar.RedirectURI, params, http.StatusSeeOther)
}
