package clients_test

import (
	"errors"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/clients"
)

// TestMetadataURLBreakouts is the client_id breakout table: each URL is
// checked without any network, and a refusal must name what is wrong.
func TestMetadataURLBreakouts(t *testing.T) {
	t.Parallel()
	cases := []struct {
		url       string
		dev       bool
		want      string // "" means accepted
		forbidden bool   // the refusal is an address refusal
	}{
		{url: "https://app.example.com/oauth/client.json"},
		{url: "https://app.example.com:8443/client.json"},
		{url: "https://app.example.com/client.json?v=2"},
		{url: "https://example.com./client.json"},
		{url: "HTTPS://APP.Example.COM/client.json"},
		{url: "http://example.com/x", want: "must be an https URL"},
		{url: "example.com/x", want: "must be an https URL"},
		{url: "ftp://example.com/x", want: "must be an https URL"},
		{url: "https:example.com/x", want: "absolute https URL"},
		{url: "https:///x", want: "absolute https URL"},
		{url: "https://user@example.com/x", want: "user name"},
		{url: "https://user:pw@example.com/x", want: "user name"},
		{url: "https://@example.com/x", want: "user name"},
		{url: "https://example.com/x#frag", want: "fragment"},
		{url: "https://example.com/x#", want: "fragment"},
		{url: "https://example.com", want: "must have a path"},
		{url: "https://example.com/", want: "must have a path"},
		{url: "https://example.com?x=1", want: "must have a path"},
		{url: "https://example.com/a/../b", want: ". or .. segments"},
		{url: "https://example.com/./b", want: ". or .. segments"},
		{url: "https://example.com/a/..", want: ". or .. segments"},
		{url: "https://example.com/a/%2e%2e/b", want: ". or .. segments"},
		{url: "https://example.com/a/%2E/b", want: ". or .. segments"},
		{url: `https://example.com/a\..\b`, want: "backslashes"},
		{url: "https://exa mple.com/x", want: "spaces"},
		{url: "https://example.com/x\t", want: "spaces"},
		{url: "https://exämple.com/x", want: "ASCII"},
		{url: "https://example.com:0/x", want: "port"},
		{url: "https://example.com:99999/x", want: "port"},
		{url: "https://example.com:/x", want: "empty port"},
		{url: "https://example.com:https/x", want: "port"},
		{url: "https://127.0.0.1/x", want: "IP address (loopback", forbidden: true},
		{url: "https://[::1]/x", want: "IP address (loopback", forbidden: true},
		{url: "https://169.254.169.254/latest/meta-data", want: "cloud metadata", forbidden: true},
		{url: "https://10.0.0.1/", want: "IP address (RFC 1918 private", forbidden: true},
		{url: "https://192.168.1.1/x", want: "private", forbidden: true},
		{url: "https://[fd00::1]/x", want: "unique local", forbidden: true},
		{url: "https://[fe80::1%25eth0]/x", want: "IP address", forbidden: true},
		{url: "https://[::ffff:127.0.0.1]/", want: "loopback", forbidden: true},
		{url: "https://[::ffff:7f00:1]/x", want: "loopback", forbidden: true},
		{url: "https://0.0.0.0/", want: "unspecified", forbidden: true},
		{url: "https://255.255.255.255/x", want: "broadcast", forbidden: true},
		{url: "https://100.64.0.1/x", want: "carrier-grade NAT", forbidden: true},
		{url: "https://8.8.8.8/x", want: "is an IP address; use a DNS name", forbidden: true},
		{url: "https://2130706433/x", want: "reads as an IP address", forbidden: true},
		{url: "https://127.1/x", want: "reads as an IP address", forbidden: true},
		{url: "https://0x7f.0.0.1/x", want: "reads as an IP address", forbidden: true},
		{url: "https://017700000001/x", want: "reads as an IP address", forbidden: true},
		{url: "https://localhost/x", want: "localhost is allowed only in dev mode", forbidden: true},
		{url: "https://LOCALHOST./x", want: "localhost is allowed only in dev mode", forbidden: true},
		{url: "https://a.localhost/x", want: "localhost is allowed only in dev mode", forbidden: true},
		{url: "http://localhost:8080/x", want: "must be an https URL"},
		{url: "https://intranet/x", want: "fully qualified"},
		{url: "https://exa_mple.com/x", want: "not a valid DNS name"},
		{url: "https://-a.example.com/x", want: "not a valid DNS name"},
		{url: "https://a..example.com/x", want: "not a valid DNS name"},
		// Dev mode admits exactly three spellings of this machine.
		{url: "http://localhost:8080/client.json", dev: true},
		{url: "http://127.0.0.1:8080/client.json", dev: true},
		{url: "http://[::1]:8080/client.json", dev: true},
		{url: "https://localhost/client.json", dev: true},
		{url: "https://app.example.com/client.json", dev: true},
		{url: "http://example.com/x", dev: true, want: "must be an https URL"},
		{url: "http://10.0.0.1/x", dev: true, want: "must be an https URL"},
		{url: "http://127.0.0.2/x", dev: true, want: "must be an https URL"},
		{url: "https://127.0.0.2/x", dev: true, want: "loopback", forbidden: true},
		{url: "http://[::ffff:127.0.0.1]/x", dev: true, want: "must be an https URL"},
		{url: "http://localhost.example.com/x", dev: true, want: "must be an https URL"},
		{url: "http://localhost/", dev: true, want: "must have a path"},
		{url: "http://user@localhost/x", dev: true, want: "user name"},
		{url: "http://localhost/x#f", dev: true, want: "fragment"},
		{url: "http://localhost/a/../x", dev: true, want: ". or .. segments"},
	}
	for _, tc := range cases {
		t.Run(tc.url, func(t *testing.T) {
			t.Parallel()
			err := clients.CheckMetadataURL(tc.url, tc.dev)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted, want refusal mentioning %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to mention %q", err, tc.want)
			}
			if !errors.Is(err, auth.ErrInvalidClientMetadata) {
				t.Errorf("error %q does not wrap ErrInvalidClientMetadata", err)
			}
			if got := errors.Is(err, clients.ErrForbiddenAddress); got != tc.forbidden {
				t.Errorf("errors.Is(ErrForbiddenAddress) = %v, want %v", got, tc.forbidden)
			}
		})
	}
}

func TestIsMetadataURL(t *testing.T) {
	t.Parallel()
	dev := clients.NewMetadataFetcher(clients.FetcherOptions{AllowLocalhost: true})
	prod := clients.NewMetadataFetcher(clients.FetcherOptions{})
	cases := []struct {
		id        string
		want, dev bool
	}{
		{"https://app.example.com/client.json", true, true},
		// Shaped like one, so Fetch, not the client store, answers it.
		{"https://10.0.0.1/x", true, true},
		{"http://localhost:8080/client.json", false, true},
		{"http://127.0.0.1:8080/client.json", false, true},
		{"http://example.com/client.json", false, false},
		{"https://app.example.com", false, false},
		{clients.NewClientID(), false, false},
		{"my-static-client", false, false},
		{"urn:example:client", false, false},
		{"", false, false},
	}
	for _, tc := range cases {
		if got := clients.IsMetadataURL(tc.id); got != tc.want {
			t.Errorf("IsMetadataURL(%q) = %v, want %v", tc.id, got, tc.want)
		}
		if got := prod.IsMetadataURL(tc.id); got != tc.want {
			t.Errorf("prod fetcher IsMetadataURL(%q) = %v, want %v", tc.id, got, tc.want)
		}
		if got := dev.IsMetadataURL(tc.id); got != tc.dev {
			t.Errorf("dev fetcher IsMetadataURL(%q) = %v, want %v", tc.id, got, tc.dev)
		}
	}
}

// FuzzMetadataURL checks that nothing panics and that every accepted
// client_id is an https URL naming a DNS host (or, in dev mode, this
// machine), with no user info, fragment or dot segments.
func FuzzMetadataURL(f *testing.F) {
	for _, s := range []string{
		"https://app.example.com/client.json", "https://127.0.0.1/x", "https://[::ffff:127.0.0.1]/",
		"http://localhost:8080/c", "https://a.example.com/%2e%2e/x", "https://u@a.example.com/x",
		"https://a.example.com:443/x?y#z", "https://2130706433/x", `https://a.example.com\@evil.example/x`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		clients.IsMetadataURL(raw)
		for _, dev := range []bool{false, true} {
			if clients.CheckMetadataURL(raw, dev) != nil {
				continue
			}
			u, err := url.Parse(raw)
			if err != nil {
				t.Fatalf("accepted %q (dev %v) but url.Parse fails: %v", raw, dev, err)
			}
			host := strings.ToLower(u.Hostname())
			local := host == "localhost" || host == "127.0.0.1" || host == "::1"
			switch {
			case u.Scheme != "https" && !(dev && local && u.Scheme == "http"):
				t.Fatalf("accepted %q (dev %v): scheme %q", raw, dev, u.Scheme)
			case host == "":
				t.Fatalf("accepted %q (dev %v): no host", raw, dev)
			case u.User != nil || strings.Contains(raw, "#"):
				t.Fatalf("accepted %q (dev %v): user info or fragment", raw, dev)
			case strings.Contains("/"+u.Path+"/", "/../") || strings.Contains("/"+u.Path+"/", "/./"):
				t.Fatalf("accepted %q (dev %v): dot segment", raw, dev)
			}
			if _, err := netip.ParseAddr(host); err == nil && !(dev && local) {
				t.Fatalf("accepted %q (dev %v): IP literal host", raw, dev)
			}
		}
	})
}
