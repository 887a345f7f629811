package egress_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runner/egress"
)

func TestLoadTrust(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "extra CA"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	extra := filepath.Join(dir, "extra.pem")
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(extra, caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	trust, err := egress.LoadTrust(extra, dir)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	if len(trust.CAs) != 1 || !bytes.Equal(trust.CAs[0].Raw, der) {
		t.Errorf("CAs = %v; want the one in %s", trust.CAs, extra)
	}
	var bundle string
	for _, kv := range trust.Env {
		if v, ok := strings.CutPrefix(kv, "SSL_CERT_FILE="); ok {
			bundle = v
		}
	}
	data, err := os.ReadFile(bundle)
	if err != nil || !strings.Contains(string(data), string(caPEM)) {
		t.Errorf("bundle %q: %v, want it to hold the extra CA", bundle, err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: trust.Pool}); err != nil {
		t.Errorf("the pool does not trust the extra CA: %v", err)
	}
	if err := os.WriteFile(extra, []byte("not a certificate"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := egress.LoadTrust(extra, dir); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("LoadTrust of a file without certificates: %v", err)
	}
}
