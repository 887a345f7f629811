package apikey_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/apikey"
)

// FuzzLookup checks that Lookup never panics, refuses exactly the inputs
// that are not e2b_ and 40 lowercase hex digits as malformed, and accepts
// no key but the one issued.
func FuzzLookup(f *testing.F) {
	s, err := apikey.Open(filepath.Join(f.TempDir(), "apikeys.json"))
	if err != nil {
		f.Fatal(err)
	}
	key, rec, err := s.Add("fuzz", "acme", []string{auth.ScopeExec})
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		key, "", apikey.Prefix, key[:len(key)-1], key + "0", strings.ToUpper(key),
		apikey.Prefix + strings.Repeat("0", 40), apikey.Prefix + strings.Repeat("ff", 20) + "\n",
		"e2b_\xff\xfe", "Bearer " + key,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := s.Lookup(in)
		if malformed := !keySyntax.MatchString(in); malformed != errors.Is(err, apikey.ErrMalformed) {
			t.Fatalf("Lookup(%q) = %v; syntax valid: %v", in, err, !malformed)
		}
		if err == nil && (in != key || got.ID != rec.ID) {
			t.Fatalf("Lookup(%q) accepted a key that was not issued: %+v", in, got)
		}
		if in == key && err != nil {
			t.Fatalf("Lookup of the issued key: %v", err)
		}
		if err != nil && !errors.Is(err, apikey.ErrMalformed) && !errors.Is(err, apikey.ErrUnknown) {
			t.Fatalf("Lookup(%q) = %v; want ErrMalformed or ErrUnknown", in, err)
		}
	})
}
