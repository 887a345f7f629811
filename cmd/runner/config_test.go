package main

import (
	"strings"
	"testing"
)

func TestParseConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string // substring of the error; empty: valid
	}{
		{"socket", []string{"--socket", "/run/sandgate/runner.sock"}, ""},
		{"listen with secret", []string{"--listen", ":7070", "--secret-file", "/etc/sandgate/secret"}, ""},
		{"listen on an IP", []string{"--listen", "10.0.0.5:7070", "--secret-file", "s"}, ""},
		{"neither", nil, "give --socket PATH"},
		{"both", []string{"--socket", "/s", "--listen", ":7070", "--secret-file", "s"}, "not both"},
		{"listen without secret", []string{"--listen", ":7070"}, "--listen needs --secret-file"},
		{"socket with secret", []string{"--socket", "/s", "--secret-file", "s"}, "--secret-file goes with --listen only"},
		{"listen without port", []string{"--listen", "7070", "--secret-file", "s"}, `--listen "7070": want HOST:PORT`},
		{"empty workspace", []string{"--socket", "/s", "--workspace", ""}, "--workspace must not be empty"},
		{"stray argument", []string{"--socket", "/s", "instal"}, `unexpected argument "instal"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := parseConfig(tt.args)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("parseConfig(%q): %v, want valid", tt.args, err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("parseConfig(%q): %v, want an error containing %q", tt.args, err, tt.want)
			}
		})
	}
}
