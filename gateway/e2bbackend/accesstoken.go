package e2bbackend

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/gateway/fleet"
)

// accessTokenPrefix starts every sandbox access token, so that one found
// in a log or a leak is recognisable.
const accessTokenPrefix = "sga1_"

// accessToken is the E2B data plane's credential for one sandbox: the
// scopes it grants (a bit mask over auth.AllScopes) and an HMAC, under
// the gateway's access key, of the sandbox id, its owner and that mask.
// Any gateway holding the key verifies it without keeping state, across
// restarts and replicas; it is useless once the sandbox is gone (ids are
// never reused) and cannot be widened to more scopes.
func (g *Server) accessToken(b *fleet.Box, scopes []string) string {
	var mask uint64
	for i, s := range auth.AllScopes {
		if slices.Contains(scopes, s) {
			mask |= 1 << i
		}
	}
	m := strconv.FormatUint(mask, 16)
	return accessTokenPrefix + m + "_" + hex.EncodeToString(g.accessMAC(b, m))
}

// accessScopes checks token against b and returns the scopes it grants.
func (g *Server) accessScopes(b *fleet.Box, token string) ([]string, bool) {
	m, mac, ok := strings.Cut(strings.TrimPrefix(token, accessTokenPrefix), "_")
	if !ok || !strings.HasPrefix(token, accessTokenPrefix) {
		return nil, false
	}
	got, err := hex.DecodeString(mac)
	if err != nil || !hmac.Equal(got, g.accessMAC(b, m)) {
		return nil, false
	}
	mask, err := strconv.ParseUint(m, 16, 64)
	if err != nil {
		return nil, false
	}
	var scopes []string
	for i, s := range auth.AllScopes {
		if mask&(1<<i) != 0 {
			scopes = append(scopes, s)
		}
	}
	return scopes, true
}

func (g *Server) accessMAC(b *fleet.Box, mask string) []byte {
	h := hmac.New(sha256.New, g.accessKey)
	fmt.Fprintf(h, "sandgate access token\x00%s\x00%s\x00%s", b.ID(), b.Owner, mask)
	return h.Sum(nil)
}
