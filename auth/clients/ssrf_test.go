package clients_test

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/clients"
)

// publicIP stands for a client's real server: the tests never connect to
// it, they are refused before.
const publicIP = "93.184.215.14"

func TestForbiddenReason(t *testing.T) {
	t.Parallel()
	cases := []struct {
		addr string
		want string // "" means public
	}{
		{publicIP, ""},
		{"1.1.1.1", ""},
		{"2606:4700:4700::1111", ""},
		{"64:ff9b::5db8:d70e", ""}, // NAT64 of a public address
		{"2002:5db8:d70e::1", ""},  // 6to4 of a public address
		{"127.0.0.1", "loopback"},
		{"127.255.255.254", "loopback"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		{"10.0.0.1", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"192.168.0.1", "private"},
		{"::ffff:10.0.0.1", "private"},
		{"fc00::1", "unique local"},
		{"fd12:3456::1", "unique local"},
		{"169.254.169.254", "cloud metadata"},
		{"::ffff:169.254.169.254", "cloud metadata"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "zone"},
		{"64:ff9b:1::a00:1", "local-use NAT64"},
		{"0.0.0.0", "unspecified"},
		{"0.1.2.3", "unspecified"},
		{"::", "unspecified"},
		{"100.64.0.1", "carrier-grade NAT"},
		{"100.127.255.255", "carrier-grade NAT"},
		{"224.0.0.1", "multicast"},
		{"ff02::1", "multicast"},
		{"255.255.255.255", "broadcast"},
		{"240.0.0.1", "reserved"},
		{"::127.0.0.1", "IPv4-compatible"},
		{"64:ff9b::a9fe:a9fe", "NAT64 form of 169.254.169.254"},
		{"64:ff9b::7f00:1", "NAT64 form of 127.0.0.1"},
		{"2002:a00:1::1", "6to4 form of 10.0.0.1"},
		{"2001:db8::1", "documentation"},
		{"192.0.2.1", "documentation"},
		{"198.18.0.1", "benchmarking"},
		{"fec0::1", "site-local"},
	}
	for _, tc := range cases {
		got := clients.ForbiddenReason(netip.MustParseAddr(tc.addr))
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s: reason %q, want %q", tc.addr, got, tc.want)
		}
	}
}

// TestDialControl drives the connect-time check directly with the
// (network, address) pairs net.Dialer hands it after its own lookup.
func TestDialControl(t *testing.T) {
	t.Parallel()
	cases := []struct {
		network, address string
		dev              bool
		ok               bool
	}{
		{"tcp4", publicIP + ":443", false, true},
		{"tcp6", "[2606:4700:4700::1111]:443", false, true},
		{"tcp4", "127.0.0.1:443", false, false},
		{"tcp6", "[::1]:443", false, false},
		{"tcp6", "[::ffff:127.0.0.1]:443", false, false},
		{"tcp4", "169.254.169.254:80", false, false},
		{"tcp4", "10.0.0.1:443", false, false},
		{"tcp6", "[fd00::1]:443", false, false},
		{"tcp6", "[fe80::1%eth0]:443", false, false},
		{"tcp4", "0.0.0.0:443", false, false},
		{"udp4", publicIP + ":443", false, false},
		{"tcp4", "not-an-address", false, false},
		// Dev mode lets loopback through, and nothing else.
		{"tcp4", "127.0.0.1:8080", true, true},
		{"tcp6", "[::1]:8080", true, true},
		{"tcp4", "10.0.0.1:443", true, false},
		{"tcp4", "169.254.169.254:80", true, false},
	}
	for _, tc := range cases {
		err := clients.DialControl(tc.dev)(tc.network, tc.address, nil)
		if (err == nil) != tc.ok {
			t.Errorf("%s %s (dev %v): err %v, want ok=%v", tc.network, tc.address, tc.dev, err, tc.ok)
		}
		if err != nil && (!errors.Is(err, clients.ErrForbiddenAddress) || !strings.Contains(err.Error(), "connect-time check")) {
			t.Errorf("%s %s: error %q is not a connect-time ErrForbiddenAddress", tc.network, tc.address, err)
		}
	}
}

// TestFetchSSRF is the fetch breakout table: every URL must be refused
// without a connection to anything, through the same Fetch the issuer
// calls. Names resolve through a test DNS server.
func TestFetchSSRF(t *testing.T) {
	t.Parallel()
	dns := startDNS(t, map[string][][]netip.Addr{
		"private.test":   {addrs("10.1.2.3")},
		"meta.test":      {addrs("169.254.169.254")},
		"loop.test":      {addrs("127.0.0.1")},
		"ula.test":       {addrs("fd00::1")},
		"linklocal.test": {addrs("fe80::1")},
		"mapped.test":    {addrs("::ffff:127.0.0.1")},
		"nat64.test":     {addrs("64:ff9b::a9fe:a9fe")},
		"cgnat.test":     {addrs("100.64.0.1")},
		"zero.test":      {addrs("0.0.0.0")},
		"mixed.test":     {addrs(publicIP, "192.168.1.10")},
		"mixed6.test":    {addrs(publicIP, "::1")},
	})
	cases := []struct {
		url, want string
		dev       bool
		forbidden bool
	}{
		{url: "https://127.0.0.1/x", want: "loopback", forbidden: true},
		{url: "https://[::1]/x", want: "loopback", forbidden: true},
		{url: "https://169.254.169.254/latest/meta-data", want: "cloud metadata", forbidden: true},
		{url: "https://10.0.0.1/", want: "private", forbidden: true},
		{url: "https://[::ffff:127.0.0.1]/", want: "loopback", forbidden: true},
		{url: "https://0.0.0.0/", want: "unspecified", forbidden: true},
		{url: "http://example.com/x", want: "https"},
		{url: "https://private.test/client.json", want: "resolves to 10.1.2.3", forbidden: true},
		{url: "https://meta.test/client.json", want: "169.254.169.254", forbidden: true},
		{url: "https://loop.test/client.json", want: "loopback", forbidden: true},
		{url: "https://ula.test/client.json", want: "unique local", forbidden: true},
		{url: "https://linklocal.test/client.json", want: "link-local", forbidden: true},
		{url: "https://mapped.test/client.json", want: "loopback", forbidden: true},
		{url: "https://nat64.test/client.json", want: "NAT64 form of 169.254.169.254", forbidden: true},
		{url: "https://cgnat.test/client.json", want: "carrier-grade NAT", forbidden: true},
		{url: "https://zero.test/client.json", want: "unspecified", forbidden: true},
		{url: "https://mixed.test/client.json", want: "192.168.1.10", forbidden: true},
		{url: "https://mixed6.test/client.json", want: "::1", forbidden: true},
		{url: "https://nxdomain.test/client.json", want: "resolve host nxdomain.test"},
		// Dev mode admits loopback only, never the rest.
		{url: "https://private.test/client.json", dev: true, want: "private", forbidden: true},
		{url: "https://meta.test/client.json", dev: true, want: "cloud metadata", forbidden: true},
		{url: "https://10.0.0.1/", dev: true, want: "private", forbidden: true},
	}
	for _, tc := range cases {
		t.Run(tc.url, func(t *testing.T) {
			t.Parallel()
			f := clients.NewMetadataFetcher(clients.FetcherOptions{Resolver: dns.resolver(), AllowLocalhost: tc.dev, Timeout: 2 * time.Second})
			_, err := f.Fetch(t.Context(), tc.url)
			if err == nil {
				t.Fatal("fetched")
			}
			if !errors.Is(err, auth.ErrInvalidClientMetadata) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want ErrInvalidClientMetadata mentioning %q", err, tc.want)
			}
			if got := errors.Is(err, clients.ErrForbiddenAddress); got != tc.forbidden {
				t.Errorf("errors.Is(ErrForbiddenAddress) = %v, want %v (%v)", got, tc.forbidden, err)
			}
		})
	}
}

// TestFetchRebinding makes the name resolve to a public address for the
// fetcher's pre-check and to 127.0.0.1, where a listener counts
// connections, when the dialer resolves it again: DNS rebinding. Only the
// connect-time check on the dialled address stands between the fetch and
// that listener, so it must see no connection at all.
func TestFetchRebinding(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var conns atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	dns := startDNS(t, map[string][][]netip.Addr{
		"rebind.test": {addrs(publicIP), addrs("127.0.0.1")},
	})
	f := clients.NewMetadataFetcher(clients.FetcherOptions{Resolver: dns.resolver(), Timeout: 2 * time.Second})
	_, err = f.Fetch(t.Context(), "https://rebind.test:"+port+"/client.json")
	if !errors.Is(err, clients.ErrForbiddenAddress) || !strings.Contains(err.Error(), "connect-time check: 127.0.0.1 is not a public address") {
		t.Fatalf("error %v, want the connect-time check to refuse 127.0.0.1", err)
	}
	if n := conns.Load(); n != 0 {
		t.Errorf("%d connections reached the loopback listener", n)
	}
}

// TestFetchRefusesLocalServerWithoutDevMode: a real server on this
// machine, named every way a URL can name it, is never reached.
func TestFetchRefusesLocalServerWithoutDevMode(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	handler := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) })
	plain := httptest.NewServer(handler)
	t.Cleanup(plain.Close)
	tlsSrv := httptest.NewTLSServer(handler)
	t.Cleanup(tlsSrv.Close)
	f := clients.NewMetadataFetcher(clients.FetcherOptions{})
	for _, u := range []string{
		plain.URL + "/client.json",
		tlsSrv.URL + "/client.json",
		"https://localhost:" + mustURL(t, tlsSrv.URL).Port() + "/client.json",
		"https://[::ffff:127.0.0.1]:" + mustURL(t, tlsSrv.URL).Port() + "/client.json",
	} {
		if _, err := f.Fetch(t.Context(), u); !errors.Is(err, auth.ErrInvalidClientMetadata) {
			t.Errorf("%s: error %v, want a refusal", u, err)
		}
	}
	if hits.Load() != 0 {
		t.Error("a local server was reached")
	}
}

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
