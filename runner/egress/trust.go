package egress

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// systemBundle is where Debian-family images keep their CA bundle.
const systemBundle = "/etc/ssl/certs/ca-certificates.crt"

// Trust is what the sandbox trusts besides its image's CAs: the
// operator's extra CAs (a private registry's, a TLS-inspecting proxy's).
type Trust struct {
	// Env points the usual tools at the bundle: OpenSSL and Go
	// (SSL_CERT_FILE), curl, requests, pip, git, and Node.
	Env []string
	// Pool holds the system's CAs and the extra ones, for http_request.
	Pool *x509.CertPool
	// CAs are the extra CAs, for Chromium, which reads no bundle file
	// (see runner/browser).
	CAs []*x509.Certificate
}

// LoadTrust reads the extra CAs at extra (PEM) and writes the image's
// bundle plus them to a new file under dir, for tools that take one
// bundle.
func LoadTrust(extra, dir string) (Trust, error) {
	pemData, err := os.ReadFile(extra)
	if err != nil {
		return Trust{}, fmt.Errorf("read the extra CAs: %w", err)
	}
	certs, err := parseCerts(pemData)
	if err != nil {
		return Trust{}, fmt.Errorf("%s: %w", extra, err)
	}
	system, err := os.ReadFile(systemBundle)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return Trust{}, fmt.Errorf("read the image's CA bundle: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(system)
	t := Trust{Pool: pool, CAs: certs}
	for _, c := range certs {
		pool.AddCert(c)
	}
	sub, err := os.MkdirTemp(dir, "sandgate-ca-")
	if err != nil {
		return Trust{}, fmt.Errorf("make the CA bundle's directory: %w", err)
	}
	if err := os.Chmod(sub, 0o755); err != nil {
		return Trust{}, err
	}
	bundle := filepath.Join(sub, "bundle.pem")
	if err := os.WriteFile(bundle, append(append(system, '\n'), pemData...), 0o644); err != nil {
		return Trust{}, fmt.Errorf("write the CA bundle: %w", err)
	}
	for _, name := range []string{"SSL_CERT_FILE", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE", "PIP_CERT", "GIT_SSL_CAINFO"} {
		t.Env = append(t.Env, name+"="+bundle)
	}
	// Node adds this file to its own built-in roots.
	t.Env = append(t.Env, "NODE_EXTRA_CA_CERTS="+extra)
	return t, nil
}

func parseCerts(data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse certificate: %w", err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("no PEM certificate in the file")
	}
	return certs, nil
}
