package resource

import (
	"strings"
)

// ParseBearer returns the token of an Authorization header value of the
// form "Bearer <b64token>" (RFC 6750 §2.1). The scheme is matched without
// regard to case; the token must use only the b64token alphabet, so a value
// with spaces, commas, quotes or control characters is refused instead of
// being guessed at. Errors wrap auth.ErrInvalidToken with a safe reason.
func ParseBearer(authorization string) (token string, err error) {
	scheme, rest, ok := strings.Cut(authorization, " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", invalid("authorization scheme is not Bearer")
	}
	if !ok {
		return "", invalid("authorization header has no token")
	}
	token = strings.TrimLeft(rest, " ")
	switch {
	case token == "":
		return "", invalid("authorization header has no token")
	case len(token) > maxTokenLen:
		return "", invalid("token too large")
	case !isB64Token(token):
		return "", invalid("malformed bearer token")
	}
	return token, nil
}

// isB64Token reports whether s matches
// b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=".
func isB64Token(s string) bool {
	body := strings.TrimRight(s, "=")
	if body == "" {
		return false
	}
	for i := 0; i < len(body); i++ {
		if !isToken68Char(body[i]) {
			return false
		}
	}
	return true
}

// isToken68Char reports whether c may appear in a token68 (RFC 9110) or
// b64token (RFC 6750) before the trailing "=" padding; the two are the same.
func isToken68Char(c byte) bool {
	return isBase64URL(c) || c == '.' || c == '~' || c == '+' || c == '/'
}
