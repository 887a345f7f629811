package browser

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Chromium on Linux reads no CA bundle file (SSL_CERT_FILE means nothing
// to it): it trusts its own root store and, for anchors added locally,
// the NSS database in $HOME/.pki/nssdb. The operator's extra CAs
// (Options.TrustCAs) reach it two ways:
//
//   - written into that database, in the home each start makes, with
//     NSS's certutil (libnss3-tools, in sandgate/browser): trusted for
//     servers like any root, whatever chain a server sends;
//   - their public-key hashes in --ignore-certificate-errors-spki-list,
//     which Chromium honours only for a server whose presented chain
//     holds a matching certificate: what remains in an image without
//     certutil.

// errNoCertutil: the image has no certutil, so the database cannot be
// written.
var errNoCertutil = errors.New("no certutil in the image (Debian: libnss3-tools), so only servers that send the CA in their chain are trusted")

// spkiList is the value of --ignore-certificate-errors-spki-list for cas:
// base64 SHA-256 hashes of their public keys.
func spkiList(cas []*x509.Certificate) string {
	hashes := make([]string, len(cas))
	for i, c := range cas {
		sum := sha256.Sum256(c.RawSubjectPublicKeyInfo)
		hashes[i] = base64.StdEncoding.EncodeToString(sum[:])
	}
	return strings.Join(hashes, ",")
}

// trustInNSS creates the NSS database of home (empty password, as
// Chromium opens it) and adds each of cas to it, trusted to issue server
// certificates ("C,,").
func trustInNSS(ctx context.Context, home string, cas []*x509.Certificate) error {
	certutil, err := exec.LookPath("certutil")
	if err != nil {
		return errNoCertutil
	}
	dir := filepath.Join(home, ".pki", "nssdb")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("make the NSS database's directory: %w", err)
	}
	db := "sql:" + dir
	run := func(args ...string) error {
		out, err := exec.CommandContext(ctx, certutil, append([]string{"-d", db}, args...)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("certutil %s: %v: %s", args[0], err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	if err := run("-N", "--empty-password"); err != nil {
		return err
	}
	for i, ca := range cas {
		file := filepath.Join(dir, fmt.Sprintf("extra-ca-%d.der", i+1))
		if err := os.WriteFile(file, ca.Raw, 0o600); err != nil {
			return fmt.Errorf("write an extra CA for certutil: %w", err)
		}
		err := run("-A", "-n", fmt.Sprintf("sandgate extra CA %d", i+1), "-t", "C,,", "-i", file)
		os.Remove(file)
		if err != nil {
			return err
		}
	}
	return nil
}
