package auth

import (
	"fmt"
	"slices"
	"strings"
)

// StaticClientPrefix starts the ID of every client created by `gateway
// client add`. Such a client's tenant is its ID, so user names and tenants
// chosen by people may not start with it.
const StaticClientPrefix = "sgc-"

// CheckName reports whether s is acceptable as a user name, tenant or
// label, naming it what in the error. It accepts 1-64 characters from a
// conservative set, so names are safe in tokens, logs and Docker labels,
// and never look like a URL or a static client ID (whose sub and tenant
// they would otherwise share).
func CheckName(what, s string) error {
	if len(s) == 0 || len(s) > 64 {
		return fmt.Errorf("%s must be 1 to 64 characters long", what)
	}
	for _, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
			r == '.' || r == '_' || r == '-' || r == '@'
		if !ok {
			return fmt.Errorf("%s %q may contain only letters, digits and . _ - @", what, s)
		}
	}
	if strings.HasPrefix(s, StaticClientPrefix) {
		return fmt.Errorf("%s %q must not start with %q, which is reserved for client IDs", what, s, StaticClientPrefix)
	}
	return nil
}

// CheckScopes reports whether every scope is one of AllScopes; the error
// names the first unknown one and lists the known ones.
func CheckScopes(scopes []string) error {
	for _, s := range scopes {
		if !slices.Contains(AllScopes, s) {
			return fmt.Errorf("unknown scope %q (known: %s)", s, strings.Join(AllScopes, ", "))
		}
	}
	return nil
}
