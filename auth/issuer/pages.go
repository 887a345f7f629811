package issuer

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"html/template"
	"net/http"
)

// The pages are plain HTML forms: no JavaScript, no external resources.
// html/template escapes every value, which matters because client names,
// URIs and IDs come from whoever registered the client.

const pageStyle = `body{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;color:#222}` +
	`label,input,button{display:block;margin:.4rem 0}input{width:100%;padding:.4rem}` +
	`button{padding:.5rem 1.2rem}.row{display:flex;gap:1rem}.err{color:#a00}.note{color:#555;font-size:.9rem}` +
	`code{word-break:break-all}`

// pageCSP allows nothing but our one inline style, and no framing, so a
// hostile site can neither run script here nor overlay the consent
// buttons (clickjacking). form-action is left out on purpose: browsers
// apply it to the redirect that follows the consent POST, which goes to
// the client's redirect URI.
var pageCSP = func() string {
	sum := sha256.Sum256([]byte(pageStyle))
	return "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) +
		"'; frame-ancestors 'none'; base-uri 'none'"
}()

var pages = template.Must(template.New("layout").Parse(`{{define "head"}}<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<meta name="referrer" content="no-referrer"><title>Sandgate sign-in</title><style>` + pageStyle + `</style></head><body>{{end}}

{{define "login"}}{{template "head"}}
<h1>Sign in</h1>
<p><strong>{{.ClientName}}</strong> wants to use your Sandgate sandboxes.</p>
{{if .Error}}<p class="err">{{.Error}}</p>{{end}}
<form method="post" action="login">
<input type="hidden" name="id" value="{{.RequestID}}">
<input type="hidden" name="csrf" value="{{.CSRF}}">
<label for="username">User name</label><input id="username" name="username" autocomplete="username" required autofocus>
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button>
</form></body></html>{{end}}

{{define "consent"}}{{template "head"}}
<h1>Allow access?</h1>
<p>Signed in as <strong>{{.User}}</strong>.</p>
<p><strong>{{.ClientName}}</strong> asks to:</p>
<ul>{{range .Scopes}}<li>{{.}}</li>{{end}}</ul>
<p class="note">Application ID: <code>{{.ClientID}}</code><br>
{{if .ClientURI}}Web site (as it claims): <code>{{.ClientURI}}</code><br>{{end}}
{{.Vouch}}</p>
{{if .UserCode}}<p>Code: <strong>{{.UserCode}}</strong></p>
<p class="err">Approve only if you started this sign-in yourself and your device shows this code.
If someone else gave you the code, deny.</p>
<p class="note">After you answer, go back to your device.<br>
{{else}}<p class="note">After you answer, you return to <code>{{.RedirectURI}}</code>.<br>
{{end}}Access is for <code>{{.Resource}}</code>.</p>
<form method="post" action="consent">
<input type="hidden" name="id" value="{{.RequestID}}">
<input type="hidden" name="csrf" value="{{.CSRF}}">
<div class="row"><button type="submit" name="action" value="approve">Approve</button>
<button type="submit" name="action" value="deny">Deny</button></div>
</form></body></html>{{end}}

{{define "device"}}{{template "head"}}
<h1>Sign in a device</h1>
<p>Enter the code your device or terminal shows.</p>
{{if .Error}}<p class="err">{{.Error}}</p>{{end}}
<form method="post" action="device">
<input type="hidden" name="csrf" value="{{.CSRF}}">
<label for="user_code">Code</label><input id="user_code" name="user_code" value="{{.UserCode}}" autocomplete="off" autocapitalize="characters" spellcheck="false" required autofocus>
<button type="submit">Continue</button>
</form></body></html>{{end}}

{{define "device_done"}}{{template "head"}}
<h1>Device sign-in</h1><p>{{.}}</p></body></html>{{end}}

{{define "problem"}}{{template "head"}}
<h1>Sign-in stopped</h1><p>{{.}}</p></body></html>{{end}}
`))

const (
	loginTemplate      = "login"
	consentTemplate    = "consent"
	problemTemplate    = "problem"
	deviceTemplate     = "device"
	deviceDoneTemplate = "device_done"
)

// render writes a page with headers that keep it out of caches and
// frames.
func (s *Server) render(w http.ResponseWriter, status int, name string, data any) {
	var buf bytes.Buffer
	if err := pages.ExecuteTemplate(&buf, name, data); err != nil {
		s.log.Error("render page", "page", name, "error", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", pageCSP)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}

// problem shows an error to the user instead of redirecting to the client.
func (s *Server) problem(w http.ResponseWriter, _ *http.Request, status int, msg string) {
	s.render(w, status, problemTemplate, msg)
}
