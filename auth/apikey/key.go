package apikey

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// Key syntax: what E2B SDKs check before they send a key.
const (
	// Prefix starts every key.
	Prefix = "e2b_"
	// keyHexLen is the number of hex digits after Prefix: 20 random bytes.
	keyHexLen = 40
)

// newKey returns a fresh key from crypto/rand.
func newKey() string {
	return Prefix + hex.EncodeToString(randomBytes(keyHexLen/2))
}

// randomBytes returns n bytes from crypto/rand, which never fails on the
// systems Go supports (it crashes the program rather than return weak
// bytes).
func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// checkKey reports whether key is Prefix and keyHexLen lowercase hex
// digits. Its errors never quote the key, which is a secret even when
// mistyped.
func checkKey(key string) error {
	rest, ok := strings.CutPrefix(key, Prefix)
	if !ok {
		return fmt.Errorf("%w: it must start with %q", ErrMalformed, Prefix)
	}
	if len(rest) != keyHexLen {
		return fmt.Errorf("%w: want %q and %d hex digits, got %d characters after it", ErrMalformed, Prefix, keyHexLen, len(rest))
	}
	for i := 0; i < len(rest); i++ {
		if c := rest[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return fmt.Errorf("%w: want %q and %d lowercase hex digits (0-9, a-f)", ErrMalformed, Prefix, keyHexLen)
		}
	}
	return nil
}

// hashKey is what the file keeps of a key. A key has 160 random bits, so
// a plain SHA-256 is enough: there is nothing to brute-force that a salt
// or a slow hash would protect.
func hashKey(key string) [sha256.Size]byte {
	return sha256.Sum256([]byte(key))
}
