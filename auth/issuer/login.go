package issuer

import (
	"errors"
	"net/http"
	"net/url"
	"time"
)

// loginPage is what the login template shows.
type loginPage struct {
	RequestID  string
	CSRF       string
	ClientName string
	Error      string
}

// login serves the sign-in form (GET) and checks it (POST).
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		s.loginForm(w, r, r.URL.Query().Get("id"), "", http.StatusOK)
	case http.MethodPost:
		s.loginSubmit(w, r)
	default:
		w.Header().Set("Allow", "GET, POST")
		s.problem(w, r, http.StatusMethodNotAllowed, "Use the sign-in form.")
	}
}

func (s *Server) loginForm(w http.ResponseWriter, r *http.Request, id, msg string, status int) {
	ar, err := s.st.reqs.get(id)
	if err != nil {
		s.problem(w, r, http.StatusBadRequest, msgExpired)
		return
	}
	if ar.Subject != "" {
		// Already signed in (e.g. the back button): go on to consent.
		http.Redirect(w, r, s.consentURL(id), http.StatusSeeOther)
		return
	}
	cookie := s.csrf.cookie(w, r)
	s.render(w, status, loginTemplate, loginPage{
		RequestID:  id,
		CSRF:       s.csrf.token(cookie, id, purposeLogin),
		ClientName: s.clientName(r, ar.ClientID),
		Error:      msg,
	})
}

// loginSubmit checks the CSRF token, the rate limits and the password,
// then binds the auth request to the user and to this browser.
func (s *Server) loginSubmit(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		s.problem(w, r, http.StatusBadRequest, "The sign-in form could not be read.")
		return
	}
	id := r.PostForm.Get("id")
	cookie, ok := s.csrf.check(r, id, purposeLogin)
	if !ok {
		s.log.WarnContext(r.Context(), "login: CSRF check failed", "auth_request_id", id)
		s.problem(w, r, http.StatusForbidden, msgForged)
		return
	}
	username, password := r.PostForm.Get("username"), r.PostForm.Get("password")
	try, ok := s.limits.beginLogin(username, r)
	if !ok {
		s.log.WarnContext(r.Context(), "login: rate limited", "user", username, "remote_ip", clientIP(r))
		s.problem(w, r, http.StatusTooManyRequests, "Too many failed sign-ins. Wait a minute and try again.")
		return
	}
	user, ok, err := s.st.checkPassword(username, password)
	try.done(err == nil && !ok) // a storage error is our fault, not the user's
	if err != nil {
		s.log.ErrorContext(r.Context(), "login: check password", "error", err)
		s.problem(w, r, http.StatusInternalServerError, "Sign-in is unavailable. Try again later.")
		return
	}
	if !ok {
		s.log.InfoContext(r.Context(), "login failed", "user", username, "remote_ip", clientIP(r))
		s.loginForm(w, r, id, "Wrong user name or password.", http.StatusUnauthorized)
		return
	}
	_, err = s.st.reqs.update(id, func(a *authRequest) error {
		if a.Subject != "" {
			return errors.New("already signed in")
		}
		a.Subject, a.Tenant, a.AuthTime, a.Browser = username, user.Tenant, time.Now().UTC(), browserID(cookie)
		return nil
	})
	if err != nil {
		s.problem(w, r, http.StatusBadRequest, msgExpired)
		return
	}
	s.log.InfoContext(r.Context(), "login", "user", username, "auth_request_id", id)
	// 303 so the browser follows with GET and never re-posts the password
	// (RFC 9700 §4.12).
	http.Redirect(w, r, s.consentURL(id), http.StatusSeeOther)
}

func (s *Server) consentURL(id string) string {
	return s.cfg.Issuer + pathConsent + "?id=" + url.QueryEscape(id)
}

// clientName returns the name to show for a client: its registered name,
// else its ID. Either may come from the internet; templates escape it.
func (s *Server) clientName(r *http.Request, clientID string) string {
	rec, err := s.st.clients.lookup(r.Context(), clientID)
	if err != nil || rec.Name == "" {
		return clientID
	}
	return rec.Name
}

const (
	msgExpired = "This sign-in request is unknown or has expired. Go back to the application and start again."
	msgForged  = "This form was not sent from this sign-in page, or it has expired. Go back to the application and start again."
)
