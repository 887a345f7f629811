package issuer

import (
	"github.com/zitadel/oidc/v3/pkg/oidc"
)

// checkPKCE requires an S256 code challenge on every authorization
// request, whatever the client's kind. zitadel enforces PKCE only for
// public clients, yet OAuth 2.1 and the MCP authorization spec require it
// for all: a confidential client's secret does not stop an injected code.
// The verifier itself is checked at the token endpoint by zitadel
// (op.AuthorizeCodeChallenge) against the challenge stored here.
func checkPKCE(challenge string, method oidc.CodeChallengeMethod) *oidc.Error {
	switch method {
	case oidc.CodeChallengeMethodS256:
	case "":
		return oidc.ErrInvalidRequest().WithDescription("PKCE is required: send code_challenge and code_challenge_method=S256")
	default:
		return oidc.ErrInvalidRequest().WithDescription("code_challenge_method must be S256")
	}
	if !isS256Challenge(challenge) {
		return oidc.ErrInvalidRequest().WithDescription("code_challenge must be the 43-character base64url SHA-256 of the code verifier")
	}
	return nil
}

// isS256Challenge reports whether c has the shape of BASE64URL(SHA256(v))
// without padding (RFC 7636 §4.2): exactly 43 base64url characters. A
// short or odd challenge points at a broken client, or at "plain" sent
// under another name.
func isS256Challenge(c string) bool {
	if len(c) != 43 {
		return false
	}
	for _, r := range c {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_'
		if !ok {
			return false
		}
	}
	return true
}
