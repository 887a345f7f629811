package clients_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/auth/clients"
)

func TestNewClientID(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 1000 {
		id := clients.NewClientID()
		raw, err := base64.RawURLEncoding.DecodeString(id)
		if err != nil || len(raw) < 16 {
			t.Fatalf("client ID %q: want ≥ 128 bits of unpadded base64url (%v)", id, err)
		}
		if seen[id] {
			t.Fatalf("client ID %q repeated", id)
		}
		seen[id] = true
	}
}

func TestSecretHash(t *testing.T) {
	t.Parallel()
	hash, err := clients.HashSecret("s3cret-value")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(hash, "s3cret") || !strings.HasPrefix(hash, "$2") {
		t.Errorf("hash %q is not a bcrypt hash", hash)
	}
	cases := []struct {
		hash, secret string
		want         bool
	}{
		{hash, "s3cret-value", true},
		{hash, "s3cret-valuE", false},
		{hash, "s3cret-value ", false},
		{hash, "", false},
		{"", "", false},
		{"", "s3cret-value", false},
		{"s3cret-value", "s3cret-value", false}, // a plaintext "hash" never matches
		{"$2a$10$garbage", "s3cret-value", false},
	}
	for _, tc := range cases {
		if got := clients.CheckSecret(tc.hash, tc.secret); got != tc.want {
			t.Errorf("CheckSecret(%q, %q) = %v, want %v", tc.hash, tc.secret, got, tc.want)
		}
	}
	if _, err := clients.HashSecret(""); err == nil {
		t.Error("HashSecret accepted an empty secret")
	}
	if _, err := clients.HashSecret(strings.Repeat("x", 73)); err == nil {
		t.Error("HashSecret accepted a secret bcrypt would truncate")
	}
	if h2, _ := clients.HashSecret("s3cret-value"); h2 == hash {
		t.Error("two hashes of one secret are equal: no salt")
	}
}
