package resource_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/resource"
)

func TestParseBearer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		header, want string
		ok           bool
	}{
		{"Bearer abc", "abc", true},
		{"bearer abc", "abc", true},
		{"BEARER abc", "abc", true},
		{"Bearer  abc", "abc", true},
		{"Bearer a.b-c_d~e+f/g==", "a.b-c_d~e+f/g==", true},
		{"Bearer", "", false},
		{"Bearer ", "", false},
		{"Bearer =", "", false},
		{"Bearer a=b", "", false},
		{"Bearer abc ", "", false},
		{"Bearer abc def", "", false},
		{"Bearer\tabc", "", false},
		{"Bearer a,b", "", false},
		{`Bearer "abc"`, "", false},
		{"Bearer abc\r\nX: y", "", false},
		{"Bearer ab\x00c", "", false},
		{"Bearerabc", "", false},
		{"Basic abc", "", false},
		{" Bearer abc", "", false},
		{"", "", false},
		{"Bearer " + strings.Repeat("a", 17<<10), "", false},
	}
	for _, tc := range tests {
		got, err := resource.ParseBearer(tc.header)
		if tc.ok != (err == nil) || got != tc.want {
			t.Errorf("ParseBearer(%q) = %q, %v; want %q, ok=%v", tc.header, got, err, tc.want, tc.ok)
		}
		if err != nil && !errors.Is(err, auth.ErrInvalidToken) {
			t.Errorf("ParseBearer(%q) err %v does not wrap ErrInvalidToken", tc.header, err)
		}
	}
}

func FuzzParseBearer(f *testing.F) {
	for _, s := range []string{"Bearer abc", "bearer a.b.c", "Bearer a==", "Bearer =", "Basic x", "Bearer  a b", "Bearer \x00", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		token, err := resource.ParseBearer(header)
		if err != nil {
			if token != "" {
				t.Fatalf("token %q returned with error", token)
			}
			if strings.Contains(err.Error(), header) && len(header) > 8 {
				t.Fatalf("error %q echoes the header", err)
			}
			return
		}
		if token == "" || strings.ContainsAny(token, " \t\r\n\",\\") {
			t.Fatalf("ParseBearer(%q) = %q", header, token)
		}
		again, err := resource.ParseBearer("Bearer " + token)
		if err != nil || again != token {
			t.Fatalf("round trip of %q: %q, %v", token, again, err)
		}
	})
}
