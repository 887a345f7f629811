package deploy_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"testing"
)

// token gets an access token the way a CI job would: an operator creates a
// client against the deployment's state directory (the running gateway
// picks it up), and the job uses the client credentials grant.
func (p *project) token(t *testing.T) string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), p.bin+"/gateway", "client", "add", "--var", p.varDir(), "--name", "compose-test", "--scopes", "sandbox:exec").CombinedOutput()
	if err != nil {
		t.Fatalf("gateway client add: %v\n%s", err, out)
	}
	var id, secret string
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "client_id:"); ok {
			id = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "client_secret:"); ok {
			secret = strings.TrimSpace(v)
		}
	}
	var meta struct {
		TokenEndpoint string `json:"token_endpoint"`
	}
	resp, err := http.Get(p.baseURL() + "/.well-known/oauth-authorization-server")
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(resp.Body).Decode(&meta)
	resp.Body.Close()
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {"sandbox:exec"}, "resource": {p.baseURL() + "/mcp"}}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, meta.TokenEndpoint, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || tok.AccessToken == "" {
		t.Fatalf("client credentials at %s: status %d, %v", meta.TokenEndpoint, resp.StatusCode, err)
	}
	return tok.AccessToken
}
