package clients

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"

	"golang.org/x/crypto/bcrypt"
)

// clientIDBytes and secretBytes are the random bytes in a generated
// client ID (128 bits: unguessable, so IDs cannot be enumerated) and
// client secret (256 bits). Their base64url forms (22 and 43 characters)
// stay under bcrypt's 72-byte input limit.
const (
	clientIDBytes = 16
	secretBytes   = 32
)

// secretCost is the bcrypt cost of stored client secrets. The secrets
// are random and long, so the cost guards against a leaked store rather
// than weak input; the default keeps token requests fast.
const secretCost = bcrypt.DefaultCost

// NewClientID returns a random client ID of 128 bits in unpadded base64url.
// It contains no ':' or '/', so it can never be mistaken for a metadata
// document URL.
func NewClientID() string {
	return randomString(clientIDBytes)
}

// newSecret returns a random client secret of 256 bits.
func newSecret() string {
	return randomString(secretBytes)
}

func randomString(n int) string {
	b := make([]byte, n)
	// crypto/rand.Read never fails on supported platforms; it would crash
	// the program rather than return predictable bytes.
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// HashSecret returns the bcrypt hash of a client secret, for
// auth.ClientRecord.SecretHash.
func HashSecret(secret string) (string, error) {
	if secret == "" {
		return "", fmt.Errorf("hash client secret: secret is empty")
	}
	h, err := bcrypt.GenerateFromPassword([]byte(secret), secretCost)
	if err != nil {
		return "", fmt.Errorf("hash client secret: %w", err)
	}
	return string(h), nil
}

// CheckSecret reports whether secret matches hash, a HashSecret result.
// The comparison takes the same time wherever the first difference is
// (bcrypt compares its digests in constant time). An empty hash or secret
// never matches, so a public client cannot authenticate with "".
func CheckSecret(hash, secret string) bool {
	if hash == "" || secret == "" {
		return false
	}
	return bcrypt.CompareHashAndPassword([]byte(hash), []byte(secret)) == nil
}
