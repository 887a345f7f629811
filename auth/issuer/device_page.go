package issuer

import (
	"net/http"
	"time"
)

// purposeDevice is the CSRF purpose of the user code form. The form
// belongs to no sign-in yet, so its token binds only the browser.
const purposeDevice = "device"

// devicePage is what the user code template shows.
type devicePage struct {
	CSRF     string
	UserCode string
	Error    string
}

// device is the RFC 8628 verification page: the user types the code the
// device shows (GET, pre-filled from verification_uri_complete), then
// signs in and answers on the same login and consent pages as the code
// flow. Submitting the code only finds the sign-in; the consent page
// shows the code again, so nothing happens on a code until the user who
// signed in approves.
func (s *Server) device(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		code := r.URL.Query().Get("user_code")
		s.deviceForm(w, r, displayUserCode(normaliseUserCode(code)), "", http.StatusOK)
	case http.MethodPost:
		s.deviceSubmit(w, r)
	default:
		w.Header().Set("Allow", "GET, POST")
		s.problem(w, r, http.StatusMethodNotAllowed, "Use the form.")
	}
}

func (s *Server) deviceForm(w http.ResponseWriter, r *http.Request, code, msg string, status int) {
	cookie := s.csrf.cookie(w, r)
	s.render(w, status, deviceTemplate, devicePage{
		CSRF:     s.csrf.token(cookie, "", purposeDevice),
		UserCode: code,
		Error:    msg,
	})
}

// deviceSubmit looks the code up under the user code rate limits and
// starts a sign-in for it.
func (s *Server) deviceSubmit(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		s.problem(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	if _, ok := s.csrf.check(r, "", purposeDevice); !ok {
		s.log.WarnContext(r.Context(), "device: CSRF check failed")
		s.problem(w, r, http.StatusForbidden, msgForged)
		return
	}
	try, ok := s.codeLimits.beginUserCode(r)
	if !ok {
		s.log.WarnContext(r.Context(), "device: user code attempts rate limited", "remote_ip", clientIP(r))
		s.problem(w, r, http.StatusTooManyRequests, "Too many wrong codes. Wait a minute and try again.")
		return
	}
	typed := r.PostForm.Get("user_code")
	d, found := s.st.devices.pending(typed)
	try.done(!found)
	if !found {
		s.log.InfoContext(r.Context(), "device: wrong or expired user code", "remote_ip", clientIP(r))
		s.deviceForm(w, r, typed, "That code is wrong or has expired. Check the code your device shows, or start again on the device.", http.StatusBadRequest)
		return
	}
	ar := &authRequest{
		ID:        randomToken(24),
		ClientID:  d.ClientID,
		Resource:  d.Resource,
		Scopes:    d.Scopes,
		CreatedAt: time.Now(),
		DeviceID:  d.ID,
		UserCode:  displayUserCode(d.UserCode),
	}
	if err := s.st.reqs.add(ar); err != nil {
		s.log.WarnContext(r.Context(), "device: store sign-in", "error", err)
		s.problem(w, r, http.StatusServiceUnavailable, "Too many sign-ins in progress. Try again in a few minutes.")
		return
	}
	http.Redirect(w, r, s.loginURL(ar.ID), http.StatusSeeOther)
}

// deviceAnswer ends a device sign-in at the consent form: the answer goes
// to the device authorization, which the device learns on its next poll,
// and the browser is told it is done.
func (s *Server) deviceAnswer(w http.ResponseWriter, r *http.Request, ar *authRequest, approve bool) {
	s.st.reqs.remove(ar.ID)
	if err := s.st.devices.answer(ar.DeviceID, approve, ar.Subject, ar.Tenant, ar.AuthTime); err != nil {
		s.problem(w, r, http.StatusBadRequest, "This code has expired or was already used. Start the sign-in again on your device.")
		return
	}
	s.log.InfoContext(r.Context(), "device sign-in answered", "user", ar.Subject, "client_id", ar.ClientID,
		"device_authorization_id", ar.DeviceID, "approved", approve)
	msg := "Access denied. The device will not be signed in; you can close this page."
	if approve {
		msg = "Done. Go back to your device: it is signed in. You can close this page."
	}
	s.render(w, http.StatusOK, deviceDoneTemplate, msg)
}
