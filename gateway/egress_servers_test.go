package gateway_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// The servers real tools in a sandbox use in the egress tests: a PyPI
// simple index with a wheel built here, git over HTTPS (git
// http-backend) and git over ssh (an ssh server that runs
// git-upload-pack). All on loopback, all built at test time.

// wheelName is the package the simple index serves.
const wheelName = "sandgate_hello-1.0-py3-none-any.whl"

// addPyPI serves a PEP 503 simple index for sandgate-hello on mux.
func addPyPI(t testing.TB, mux *http.ServeMux) {
	t.Helper()
	wheel := buildWheel(t)
	sum := sha256.Sum256(wheel)
	mux.HandleFunc("/simple/sandgate-hello/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!DOCTYPE html><html><body><a href="/packages/%s#sha256=%s">%s</a></body></html>`, wheelName, hex.EncodeToString(sum[:]), wheelName)
	})
	mux.HandleFunc("/packages/"+wheelName, func(w http.ResponseWriter, r *http.Request) { w.Write(wheel) })
}

// buildWheel makes a pure-Python wheel whose module says hello.
func buildWheel(t testing.TB) []byte {
	t.Helper()
	files := map[string]string{
		"sandgate_hello/__init__.py":                 "def hello():\n    return 'hello from a wheel fetched through the egress proxy'\n",
		"sandgate_hello-1.0.dist-info/METADATA":      "Metadata-Version: 2.1\nName: sandgate-hello\nVersion: 1.0\n",
		"sandgate_hello-1.0.dist-info/WHEEL":         "Wheel-Version: 1.0\nGenerator: sandgate-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
		"sandgate_hello-1.0.dist-info/top_level.txt": "sandgate_hello\n",
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	var record strings.Builder
	for _, name := range []string{"sandgate_hello/__init__.py", "sandgate_hello-1.0.dist-info/METADATA", "sandgate_hello-1.0.dist-info/WHEEL", "sandgate_hello-1.0.dist-info/top_level.txt"} {
		body := files[name]
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, body)
		sum := sha256.Sum256([]byte(body))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", name, base64.RawURLEncoding.EncodeToString(sum[:]), len(body))
	}
	record.WriteString("sandgate_hello-1.0.dist-info/RECORD,,\n")
	w, err := zw.Create("sandgate_hello-1.0.dist-info/RECORD")
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(w, record.String())
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// gitRepo makes a bare repository holding one commit with README, and
// returns the directory that holds it (as repo.git).
func gitRepo(t testing.TB) string {
	t.Helper()
	root := t.TempDir()
	work := filepath.Join(root, "work")
	run := func(dir string, args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "HOME="+root)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	run(work, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(work, "README"), []byte("cloned through the egress proxy\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(work, "add", "README")
	run(work, "commit", "-q", "-m", "first")
	run(root, "clone", "-q", "--bare", work, filepath.Join(root, "repo.git"))
	return root
}

// addGitHTTP serves the repositories under root at /git/ with git's own
// smart-HTTP CGI.
func addGitHTTP(t testing.TB, mux *http.ServeMux, root string) {
	t.Helper()
	backend := "/usr/lib/git-core/git-http-backend"
	if _, err := os.Stat(backend); err != nil {
		t.Fatalf("git http-backend: %v (apt-get install git)", err)
	}
	mux.Handle("/git/", &cgi.Handler{Path: backend, Root: "/git",
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}})
}

// startGitSSH serves git-upload-pack for the repositories under root over
// ssh on a loopback port, accepting any client (auth "none").
func startGitSSH(t testing.TB, root string) string {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &ssh.ServerConfig{NoClientAuth: true}
	cfg.AddHostKey(signer)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go serveGitSSH(conn, cfg, root)
		}
	}()
	return ln.Addr().String()
}

func serveGitSSH(conn net.Conn, cfg *ssh.ServerConfig, root string) {
	defer conn.Close()
	_, chans, reqs, err := ssh.NewServerConn(conn, cfg)
	if err != nil {
		return
	}
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			nc.Reject(ssh.UnknownChannelType, "session only")
			continue
		}
		ch, requests, err := nc.Accept()
		if err != nil {
			return
		}
		go serveGitSession(ch, requests, root)
	}
}

// serveGitSession runs "git-upload-pack '/repo.git'" as asked.
func serveGitSession(ch ssh.Channel, requests <-chan *ssh.Request, root string) {
	defer ch.Close()
	for req := range requests {
		if req.Type != "exec" {
			req.Reply(req.Type == "env", nil)
			continue
		}
		var payload struct{ Command string }
		ssh.Unmarshal(req.Payload, &payload)
		verb, arg, _ := strings.Cut(payload.Command, " ")
		repo := filepath.Join(root, filepath.Clean("/"+strings.Trim(arg, "'\"")))
		if verb != "git-upload-pack" {
			req.Reply(false, nil)
			return
		}
		req.Reply(true, nil)
		cmd := exec.Command("git-upload-pack", repo)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = ch, ch, ch.Stderr()
		status := uint32(0)
		if err := cmd.Run(); err != nil {
			status = 1
		}
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], status)
		ch.SendRequest("exit-status", false, b[:])
		return
	}
}

// addNPM serves a minimal npm registry for sandgate-hello on mux, for
// requests to host only (a registry's documents name their own URLs).
func addNPM(t testing.TB, mux *http.ServeMux, host string) {
	t.Helper()
	tgz := buildNPMPackage(t)
	sha1sum := sha1.Sum(tgz)
	sha512sum := sha512.Sum512(tgz)
	packument := map[string]any{
		"name": "sandgate-hello", "dist-tags": map[string]string{"latest": "1.0.0"},
		"versions": map[string]any{"1.0.0": map[string]any{
			"name": "sandgate-hello", "version": "1.0.0", "main": "index.js",
			"dist": map[string]string{
				"tarball":   "https://" + host + "/sandgate-hello/-/sandgate-hello-1.0.0.tgz",
				"shasum":    hex.EncodeToString(sha1sum[:]),
				"integrity": "sha512-" + base64.StdEncoding.EncodeToString(sha512sum[:]),
			},
		}},
	}
	mux.HandleFunc(host+"/sandgate-hello", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(packument)
	})
	mux.HandleFunc(host+"/sandgate-hello/-/sandgate-hello-1.0.0.tgz", func(w http.ResponseWriter, r *http.Request) { w.Write(tgz) })
}

func buildNPMPackage(t testing.TB) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, body := range map[string]string{
		"package/package.json": `{"name": "sandgate-hello", "version": "1.0.0", "main": "index.js"}`,
		"package/index.js":     "exports.hello = () => 'hello from an npm package fetched through the egress proxy';\n",
	} {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), ModTime: time.Unix(1700000000, 0)}); err != nil {
			t.Fatal(err)
		}
		io.WriteString(tw, body)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
