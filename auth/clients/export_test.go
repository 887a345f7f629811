package clients

import (
	"net/netip"
	"time"

	"github.com/sandgate/sandgate/auth"
)

// Internal seams for the breakout tables: the checks are tested one by
// one here, and end to end through Fetch in fetch_test.go and ssrf_test.go.
var (
	DialControl = dialControl
	CacheTTL    = cacheTTL
)

// CheckMetadataURL runs the static client_id rules without fetching.
func CheckMetadataURL(raw string, allowLocalhost bool) error {
	_, err := parseMetadataURL(raw, allowLocalhost)
	return err
}

// ForbiddenReason says why addr must not be reached, or "".
func ForbiddenReason(addr netip.Addr) string { return forbiddenReason(addr) }

// ParseDocument checks a document body as Fetch does once it has one.
func ParseDocument(body []byte, clientID string) (auth.ClientRecord, error) {
	return parseDocument(body, clientID, auth.AllScopes, time.Time{})
}
