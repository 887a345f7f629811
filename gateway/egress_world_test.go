package gateway_test

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/sandgate/sandgate/gateway"
	"github.com/sandgate/sandgate/gateway/egress"
	"github.com/sandgate/sandgate/sandbox/sandboxtest"
)

// egressWorld is the outside world of the egress tests, all on this
// machine's loopback: a test CA, an HTTPS and a plain HTTP server that
// answer for *.test names, and a resolver that maps those names. The
// gateway reaches the servers through egress.Testing, which maps the
// ports 443 and 80 of loopback to them; every other loopback port stays
// refused, as in production.
type egressWorld struct {
	CAPEM    string
	CAFile   string // CAPEM in a file, for the provider's extra CAs
	HTTPS    *httptest.Server
	HTTP     *httptest.Server
	SSH      string // host:port of the git ssh server
	Resolver *testResolver
	// bigServed is closed when a /big response has been written whole.
	bigServed chan struct{}
	bigOnce   sync.Once
}

// bigBytes is the size of /big, the bulk download.
const bigBytes = 1 << 30

func newEgressWorld(t testing.TB) *egressWorld {
	t.Helper()
	caCert, caKey := sandboxtest.NewCA(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s over %s\n", r.Host, map[bool]string{true: "https", false: "http"}[r.TLS != nil])
	})
	mux.HandleFunc("/echo-host", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "host=%s uri=%s connection=%s\n", r.Host, r.RequestURI, r.Header.Get("Connection"))
	})
	w := &egressWorld{Resolver: newTestResolver(), bigServed: make(chan struct{})}
	mux.HandleFunc("/big", func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Length", strconv.Itoa(bigBytes))
		buf := make([]byte, 256<<10)
		for sent := 0; sent < bigBytes; sent += len(buf) {
			if _, err := rw.Write(buf); err != nil {
				return
			}
		}
		w.bigOnce.Do(func() { close(w.bigServed) })
	})
	addPyPI(t, mux)
	addNPM(t, mux, "npm.allowed.test")
	repos := gitRepo(t)
	addGitHTTP(t, mux, repos)
	w.SSH = startGitSSH(t, repos)
	w.HTTPS = httptest.NewUnstartedServer(mux)
	// Other servers of the world are told apart only by name.
	w.HTTPS.TLS = &tls.Config{Certificates: []tls.Certificate{sandboxtest.LeafCert(t, caCert, caKey, "allowed.test", "*.allowed.test", "other.test", "rebind.test")}}
	w.HTTPS.StartTLS()
	t.Cleanup(w.HTTPS.Close)
	w.HTTP = httptest.NewServer(mux)
	t.Cleanup(w.HTTP.Close)
	w.CAPEM = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caCert.Raw}))
	w.CAFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(w.CAFile, []byte(w.CAPEM), 0o644); err != nil {
		t.Fatal(err)
	}
	return w
}

// configure points cfg's egress at the world: its resolver, its two
// servers as ports 443 and 80 of loopback, and allow as the ceiling (and
// the sandbox default) of every tenant.
func (w *egressWorld) configure(t testing.TB, cfg *gateway.Config, allow ...string) {
	t.Helper()
	p, err := egress.NewTenantPolicy(allow, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Egress.Policy = egress.Tenants{Deployment: p}
	cfg.Egress.Resolver = w.Resolver
	cfg.Egress.Testing = &egress.Testing{Loopback: map[uint16]uint16{443: port(t, w.HTTPS.URL), 80: port(t, w.HTTP.URL), 22: port(t, "http://"+w.SSH)}}
}

func port(t testing.TB, rawURL string) uint16 {
	t.Helper()
	_, p, err := net.SplitHostPort(rawURL[len("https://"):])
	if rawURL[:5] == "http:" {
		_, p, err = net.SplitHostPort(rawURL[len("http://"):])
	}
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(p)
	return uint16(n)
}

// testResolver maps names to addresses. A name in rebind answers its
// first address once and its second ever after, as a rebinding DNS
// server would.
type testResolver struct {
	mu     sync.Mutex
	names  map[string][]netip.Addr
	rebind map[string]int // lookups so far
}

func newTestResolver() *testResolver {
	a := netip.MustParseAddr
	return &testResolver{rebind: map[string]int{}, names: map[string][]netip.Addr{
		"allowed.test":      {a("127.0.0.1")},
		"sub.allowed.test":  {a("127.0.0.1")},
		"idle.allowed.test": {a("127.0.0.1")},
		"bulk.allowed.test": {a("127.0.0.1")},
		"pypi.allowed.test": {a("127.0.0.1")},
		"git.allowed.test":  {a("127.0.0.1")},
		"npm.allowed.test":  {a("127.0.0.1")},
		"other.test":        {a("127.0.0.1")},
		"private.test":      {a("10.20.30.40")},
		"metadata.test":     {a("169.254.169.254")},
		"mapped.test":       {a("::ffff:127.0.0.1")},
		"rebind.test":       {a("127.0.0.1"), a("169.254.169.254")},
	}}
}

func (r *testResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	addrs, ok := r.names[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	if host == "rebind.test" {
		n := r.rebind[host]
		r.rebind[host]++
		return addrs[min(n, 1) : min(n, 1)+1], nil
	}
	return addrs, nil
}
