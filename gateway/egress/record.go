package egress

import (
	"time"

	"github.com/sandgate/sandgate/auth/identity"
)

// Record is the account of one proxied connection, refused or ended.
type Record struct {
	SandboxID string
	Tenant    string
	Principal identity.Identity // the Gate's Principal
	Kind      string
	Host      string // as normalised ("" when the host was invalid: see Asked)
	Asked     string // host:port as the sandbox sent it
	Port      uint16
	SNI       string // the TLS server name, when one was read
	IP        string // the address dialled, "" when none was
	Rule      string // the sandbox rule that allowed it, "" when refused
	Status    int    // the verdict: 200, or the refusal's HTTP status
	Refused   string // why it was refused, "" when allowed
	Closed    string // why an allowed connection was cut early ("" for a normal end)
	BytesUp   int64  // sandbox → destination
	BytesDown int64  // destination → sandbox
	// Unrecorded counts the connections refused over the rate limit, since
	// the gate's last record, that have no record of their own.
	Unrecorded int64
	Start      time.Time
	Duration   time.Duration
}
