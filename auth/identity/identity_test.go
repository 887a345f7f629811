package identity_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/sandgate/sandgate/auth/identity"
)

// The JSON form is the "principal" member of every audit record, sealed
// into its hash chain: a change here breaks the verification of logs
// written before it.
func TestJSONIsTheAuditPrincipal(t *testing.T) {
	id := identity.Identity{Issuer: "https://idp", Subject: "alice", Tenant: "acme", ClientID: "c1", Scopes: []string{"sandbox:exec"},
		Audience: []string{"https://gw"}, IssuedAt: time.Unix(1, 0), ExpiresAt: time.Unix(2, 0)}
	got, err := json.Marshal(id)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"issuer":"https://idp","subject":"alice","tenant":"acme","client_id":"c1","scopes":["sandbox:exec"]}`
	if string(got) != want {
		t.Fatalf("JSON = %s, want %s", got, want)
	}
	if got, _ := json.Marshal(identity.Identity{}); string(got) != `{}` {
		t.Fatalf("empty identity = %s, want {}", got)
	}
}

// Digest labels every sandbox with its owner; sandboxes made by earlier
// builds are found again only if it never changes.
func TestDigestIsStable(t *testing.T) {
	a := identity.Identity{Issuer: "local", Subject: "local", Tenant: "t1", Scopes: []string{"x"}}
	// sha256("local\x00local"), first 16 bytes in hex.
	if got, want := a.Digest(), "6bbc5765a3e8886bb7878dfaca9ca610"; got != want {
		t.Fatalf("Digest = %q, want %q", got, want)
	}
	b := identity.Identity{Issuer: "local", Subject: "local", Tenant: "t2", ClientID: "other"}
	if a.Digest() != b.Digest() {
		t.Fatal("Digest depends on more than issuer and subject")
	}
	if c := (identity.Identity{Issuer: "local\x00l", Subject: "ocal"}); c.Digest() == a.Digest() {
		t.Fatal("Digest does not separate issuer from subject")
	}
}

func TestContext(t *testing.T) {
	if _, ok := identity.From(context.Background()); ok {
		t.Fatal("From found an identity in an empty context")
	}
	id := identity.Identity{Subject: "bob", Scopes: []string{"a"}}
	got, ok := identity.From(identity.With(context.Background(), id))
	if !ok || got.Subject != "bob" || !got.HasScope("a") || got.HasScope("b") {
		t.Fatalf("From(With(id)) = %+v, %v", got, ok)
	}
}
