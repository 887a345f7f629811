package deploy_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/auth/issuer"
)

// testIssuer is the OIDC issuer the deployed gateways trust: Sandgate's
// own embedded authorization server, served over TLS from this process
// at an address the cluster's pods reach. It stands for the operator's
// issuer (Keycloak, Zitadel, ...): the gateways know only its URL and
// verify its tokens against its JWKS, as they would any other's.
type testIssuer struct {
	url   string // https://HOST:PORT, the issuer's identifier
	port  int
	dir   string // the authorization server's state
	caPEM []byte // the CA that signed its certificate
	http  *http.Client
}

// startIssuer serves an authorization server for resource on host, with
// a certificate for host from a CA of its own.
func startIssuer(t *testing.T, host, resource string) *testIssuer {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatalf("listen for the issuer on %s (the address pods reach the host at): %v", host, err)
	}
	caPEM, cert := issuerCert(t, host)
	iss := &testIssuer{url: "https://" + ln.Addr().String(), port: ln.Addr().(*net.TCPAddr).Port, dir: t.TempDir(), caPEM: caPEM}
	is, err := issuer.New(t.Context(), issuer.Config{Issuer: iss.url, Resources: []string{resource}, Dir: iss.dir,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	srv := &http.Server{Handler: is.Handler(), ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
	go func() {
		if err := srv.ServeTLS(ln, "", ""); !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("issuer: %v", err)
		}
	}()
	t.Cleanup(func() {
		srv.Close()
		is.Close()
	})
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	iss.http = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	return iss
}

// token makes a client with scopes and gets it an access token for
// resource by the client credentials grant, as a CI job would.
func (i *testIssuer) token(t *testing.T, resource string, scopes ...string) string {
	t.Helper()
	id, secret, err := issuer.AddClient(i.dir, "deploy-test", scopes)
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		TokenEndpoint string `json:"token_endpoint"`
	}
	i.do(t, http.MethodGet, i.url+"/.well-known/oauth-authorization-server", nil, "", &meta)
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {strings.Join(scopes, " ")}, "resource": {resource}}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	i.do(t, http.MethodPost, meta.TokenEndpoint, form, url.QueryEscape(id)+":"+url.QueryEscape(secret), &tok)
	if tok.AccessToken == "" {
		t.Fatalf("%s gave no access token", meta.TokenEndpoint)
	}
	return tok.AccessToken
}

// do sends a request to the issuer (a form, with basic auth if given)
// and decodes its JSON answer into out.
func (i *testIssuer) do(t *testing.T, method, u string, form url.Values, basic string, out any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, u, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if id, secret, ok := strings.Cut(basic, ":"); ok {
		req.SetBasicAuth(id, secret)
	}
	resp, err := i.http.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %s", method, u, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
}

// issuerCert makes a CA and a server certificate for the IP host signed
// by it, both valid for an hour; it returns the CA as PEM.
func issuerCert(t *testing.T, host string) ([]byte, tls.Certificate) {
	t.Helper()
	ip := net.ParseIP(host)
	if ip == nil {
		t.Fatalf("issuer host %q is not an IP address", host)
	}
	now := time.Now()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sandgate deploy test CA"},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: host}, IPAddresses: []net.IP{ip},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
