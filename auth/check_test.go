package auth_test

import (
	"strings"
	"testing"

	"github.com/sandgate/sandgate/auth"
)

func TestCheckName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		want string // substring of the error; "" for none
	}{
		{"acme", ""},
		{"team-a.b_c@x", ""},
		{"", "1 to 64"},
		{strings.Repeat("a", 65), "1 to 64"},
		{"a b", "only letters"},
		{"a/b", "only letters"},
		{"ünï", "only letters"},
		{"sgc-0123", "reserved for client IDs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := auth.CheckName("tenant", tt.name)
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("CheckName(%q) = %v, want %q", tt.name, err, tt.want)
			}
		})
	}
}

func TestCheckScopes(t *testing.T) {
	t.Parallel()
	if err := auth.CheckScopes(auth.AllScopes); err != nil {
		t.Errorf("CheckScopes(AllScopes) = %v", err)
	}
	err := auth.CheckScopes([]string{auth.ScopeExec, "sandbox:root"})
	if err == nil || !strings.Contains(err.Error(), `"sandbox:root"`) || !strings.Contains(err.Error(), auth.ScopeFilesRead) {
		t.Errorf("CheckScopes with an unknown scope = %v; want it named and the known ones listed", err)
	}
}
