package browser_test

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sandgate/sandgate/runner/browser"
	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/sandbox/sandboxtest"
)

// TestExtraCAs: a server whose certificate an extra CA issued, and that
// sends only its own certificate (as servers do: the root is the
// client's to hold), loads in a browser given that CA (Options.TrustCAs,
// written to its NSS database) and fails in one without it.
func TestExtraCAs(t *testing.T) {
	ca, caKey := sandboxtest.NewCA(t)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "<title>private CA</title><p>served with a leaf only</p>")
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{sandboxtest.LeafCert(t, ca, caKey, "localhost")}}
	srv.StartTLS()
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	url := "https://localhost:" + port + "/"

	trusting := newManager(t, func(o *browser.Options) { o.TrustCAs = []*x509.Certificate{ca} })
	if trusting == nil {
		return // ran in the browser image
	}
	if res := do(t, trusting, protocol.BrowserRequest{Action: protocol.BrowserNavigate, URL: url}); res.Title != "private CA" {
		t.Fatalf("the page of the extra CA's server: title %q; want %q", res.Title, "private CA")
	}
	plain := newManager(t)
	fails(t, plain, protocol.BrowserRequest{Action: protocol.BrowserNavigate, URL: url}, "ERR_CERT_AUTHORITY_INVALID")
}
