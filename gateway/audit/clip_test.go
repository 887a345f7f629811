package audit_test

import (
	"testing"

	"github.com/sandgate/sandgate/gateway/audit"
)

// TestClipOnCharacterBoundary: Clip keeps at most n bytes, never ends
// inside a character, and backs off no further than one character's
// length over stray continuation bytes.
func TestClipOnCharacterBoundary(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"abcdef", "abcde…"},
		{"abcd", "abcd"},
		{"abcd€x", "abcd…"},
		{"abc€x", "abc…"},
		{"ab€x", "ab€…"},
		{"a\x80\x80\x80\x80\x80\x80", "a\x80…"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			if got := audit.Clip(tc.in, 5); got != tc.want {
				t.Errorf("audit.Clip(%q, 5) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
