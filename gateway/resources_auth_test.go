package gateway_test

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandgate/sandgate/auth/issuer"
	"github.com/sandgate/sandgate/auth/resource"
)

// clientToken registers an OAuth client with scopes and returns a token.
func clientToken(t *testing.T, og *oauthGateway, name, scopes string) string {
	t.Helper()
	id, secret, err := issuer.AddClient(og.AuthDir, name, strings.Fields(scopes))
	if err != nil {
		t.Fatal(err)
	}
	tr, code := postToken(t, og.tokenEndpoint(t), url.Values{"grant_type": {"client_credentials"}, "scope": {scopes}}, id+":"+secret)
	if code != http.StatusOK {
		t.Fatalf("token for %s: %d", name, code)
	}
	return tr.AccessToken
}

// TestLocalResourcesIdentity: another principal's sandbox is "not found"
// and not listed; reading files needs sandbox:files:read and the audit
// resource sandbox:audit, refused with 403 naming the scope.
func TestLocalResourcesIdentity(t *testing.T) {
	t.Parallel()
	og := startLocalOAuthGateway(t)
	owner := modernBearerClient(t, og.URL, clientToken(t, og, "owner", "sandbox:exec sandbox:files:read sandbox:files:write sandbox:audit"))
	id := newSandboxID(t, owner)
	write(t, owner, id, "secret.txt", "mine", "")
	uri := "sandbox://" + id + "/secret.txt"
	if _, err := readResource(t, owner, uri); err != nil {
		t.Fatalf("owner reads its file: %v", err)
	}

	stranger := modernBearerClient(t, og.URL, clientToken(t, og, "stranger", "sandbox:exec sandbox:files:read"))
	if _, err := readResource(t, stranger, uri); !errors.Is(err, mcp.ErrInvalidParams) || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("another principal reading the owner's file: %v, want not found", err)
	}
	for _, u := range listURIs(t, stranger) {
		if strings.Contains(u, id) {
			t.Fatalf("another principal's resources/list shows %s", u)
		}
	}

	narrow := clientToken(t, og, "narrow", "sandbox:exec")
	for _, tc := range []struct{ uri, scope string }{{uri, "sandbox:files:read"}, {"audit://me/recent", "sandbox:audit"}} {
		resp := rawMCP(t, og.URL, narrow, `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"`+tc.uri+`","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, "")
		ch, _ := resource.ParseChallenges(resp.Header.Get("WWW-Authenticate"))
		if resp.StatusCode != http.StatusForbidden || len(ch) == 0 || ch[0].Params["scope"] != tc.scope {
			t.Errorf("resources/read %s without %s: %d %q", tc.uri, tc.scope, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}
	for _, u := range listURIs(t, modernBearerClient(t, og.URL, narrow)) {
		t.Errorf("a token without read scopes lists %s", u)
	}
}
