package e2b_test

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/gateway/e2b"
)

// bigFile is larger than two upload chunks (8 MiB) and several download
// chunks (4 MiB), so that appends and repeated reads run.
const bigFile = 20 << 20

// entry is one element of POST /files's answer.
type entry struct {
	Name string `json:"name"`
	Type string `json:"type"`
	Path string `json:"path"`
}

// octetUpload is how the SDK sends one file as a stream.
func octetUpload(path string, data []byte) request {
	return request{method: http.MethodPost, path: "/files?username=user&path=" + url.QueryEscape(path),
		contentType: "application/octet-stream", body: bytes.NewReader(data)}
}

// multipartUpload is how the SDK sends files by default: one "file" part
// each, the path as its filename; ?path= only when it writes one file.
func multipartUpload(t *testing.T, queryPath string, files map[string][]byte) request {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for name, data := range files {
		w, err := mw.CreateFormFile("file", name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data)
	}
	mw.Close()
	p := "/files?username=user"
	if queryPath != "" {
		p += "&path=" + url.QueryEscape(queryPath)
	}
	return request{method: http.MethodPost, path: p, contentType: mw.FormDataContentType(), body: &buf}
}

func download(path string) request {
	return request{method: http.MethodGet, path: "/files?username=user&path=" + url.QueryEscape(path)}
}

// decodeEntries checks a 200 and returns the uploaded files.
func decodeEntries(t *testing.T, res *http.Response) []entry {
	t.Helper()
	if res.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(res.Body)
		t.Fatalf("upload: %s: %s", res.Status, body)
	}
	var es []entry
	if err := json.NewDecoder(res.Body).Decode(&es); err != nil {
		t.Fatal(err)
	}
	return es
}

// apiError checks res's status and envd's error shape, and returns the
// message.
func apiError(t *testing.T, res *http.Response, status int) string {
	t.Helper()
	var e struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != status || json.Unmarshal(body, &e) != nil || e.Code != status || e.Message == "" {
		t.Fatalf("got %s %s, want %d with {code, message}", res.Status, body, status)
	}
	return e.Message
}

func randomBytes(t *testing.T, n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// leftovers lists the upload temporaries under dir.
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	var found []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".upload-") {
			found = append(found, p)
		}
		return nil
	})
	return found
}

func TestUploadDownloadRoundTrip(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	data := randomBytes(t, bigFile)
	for _, tt := range []struct {
		name string
		req  func(path string) request
	}{
		{"octet-stream", func(p string) request { return octetUpload(p, data) }},
		{"multipart", func(p string) request { return multipartUpload(t, p, map[string][]byte{p: data}) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := "round/" + tt.name + ".bin"
			es := decodeEntries(t, env.do(t, tt.req(path)))
			want := filepath.Join(env.workspace, path)
			if len(es) != 1 || es[0] != (entry{Name: tt.name + ".bin", Type: "file", Path: want}) {
				t.Fatalf("upload answered %+v, want one entry for %s", es, want)
			}
			res := env.do(t, download(path))
			if res.StatusCode != http.StatusOK || res.ContentLength != bigFile || res.Header.Get("Content-Type") != "application/octet-stream" {
				t.Fatalf("download: %s, Content-Length %d, Content-Type %q", res.Status, res.ContentLength, res.Header.Get("Content-Type"))
			}
			h := sha256.New()
			if _, err := io.Copy(h, res.Body); err != nil {
				t.Fatal(err)
			}
			if got, want := h.Sum(nil), sha256.Sum256(data); !bytes.Equal(got, want[:]) {
				t.Fatal("downloaded bytes differ from the uploaded ones")
			}
			if l := leftovers(t, env.workspace); len(l) > 0 {
				t.Fatalf("temporary files left: %v", l)
			}
		})
	}
	for _, op := range env.runner.recorded() {
		if op.Summary["path"] == nil || len(op.Summary) > 2 {
			t.Errorf("op %s: audit summary %v, want the path and at most a byte count", op.Name, op.Summary)
		}
	}
}

// TestDownloadFromHost: a Runner that opens files on the gateway's own
// disk (e2b.HostReader) serves a download by copying from the open file,
// with the header and bytes the runner would give; a file the host
// declines goes through the runner; and a file that shrinks after its
// stat cuts the download off instead of ending it short.
func TestDownloadFromHost(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	data := randomBytes(t, bigFile)
	for _, name := range []string{"host.bin", "declined.bin", "shrinks.bin"} {
		if err := os.WriteFile(filepath.Join(env.workspace, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var opened []string
	env.backend.openRegular = func(path string) (*os.File, fs.FileInfo, error) {
		if path == "declined.bin" {
			return nil, nil, errors.ErrUnsupported
		}
		f, err := os.Open(filepath.Join(env.workspace, path))
		if err != nil {
			return nil, nil, err
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, nil, err
		}
		opened = append(opened, path)
		if path == "shrinks.bin" {
			if err := os.Truncate(filepath.Join(env.workspace, path), fi.Size()/2); err != nil {
				t.Error(err)
			}
		}
		return f, fi, nil
	}

	for _, name := range []string{"host.bin", "declined.bin"} {
		res := env.do(t, download(name))
		body, err := io.ReadAll(res.Body)
		if err != nil || res.StatusCode != http.StatusOK || res.ContentLength != bigFile || res.Header.Get("Content-Type") != "application/octet-stream" {
			t.Fatalf("download %s: %s, Content-Length %d, Content-Type %q, %v", name, res.Status, res.ContentLength, res.Header.Get("Content-Type"), err)
		}
		if !bytes.Equal(body, data) {
			t.Errorf("download %s: the bytes differ from the file's", name)
		}
	}
	if len(opened) != 1 || opened[0] != "host.bin" {
		t.Errorf("files opened on the host: %v, want only host.bin (declined.bin goes through the runner)", opened)
	}

	res := env.do(t, download("shrinks.bin"))
	body, err := io.ReadAll(res.Body)
	if err == nil {
		t.Errorf("a file that shrank after its stat: %s and %d of %d bytes without an error; want the download cut off", res.Status, len(body), res.ContentLength)
	}
}

func TestUploadSmallFiles(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte("zipped\n"))
	zw.Close()
	gzReq := octetUpload("gz/a.txt", gz.Bytes())
	gzReq.header = map[string]string{"Content-Encoding": "gzip"}

	for _, tt := range []struct {
		name  string
		req   request
		files map[string]string // path in the workspace → content
	}{
		{"parents are created", octetUpload("a/b/c/new.txt", []byte("hello")), map[string]string{"a/b/c/new.txt": "hello"}},
		{"empty file", octetUpload("empty", nil), map[string]string{"empty": ""}},
		{"gzip", gzReq, map[string]string{"gz/a.txt": "zipped\n"}},
		{"several files by filename", multipartUpload(t, "", map[string][]byte{"multi/one.txt": []byte("1"), "multi/deep/two.txt": []byte("2")}),
			map[string]string{"multi/one.txt": "1", "multi/deep/two.txt": "2"}},
		{"filename with a quote", multipartUpload(t, "", map[string][]byte{`q/say "hi".txt`: []byte("q")}), map[string]string{`q/say "hi".txt`: "q"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			es := decodeEntries(t, env.do(t, tt.req))
			if len(es) != len(tt.files) {
				t.Fatalf("answered %d entries %+v, want %d", len(es), es, len(tt.files))
			}
			for p, want := range tt.files {
				got, err := os.ReadFile(filepath.Join(env.workspace, p))
				if err != nil || string(got) != want {
					t.Fatalf("%s holds %q (%v), want %q", p, got, err, want)
				}
				res := env.do(t, download(p))
				body, _ := io.ReadAll(res.Body)
				if res.StatusCode != http.StatusOK || string(body) != want || res.Header.Get("Content-Length") != strconv.Itoa(len(want)) {
					t.Fatalf("download %s: %s %q (Content-Length %s)", p, res.Status, body, res.Header.Get("Content-Length"))
				}
			}
		})
	}
}

func TestFilesErrors(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	if err := os.Mkdir(filepath.Join(env.workspace, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		req    request
		status int
		says   string // part of the message
	}{
		{"download a missing file", download("nope.txt"), http.StatusNotFound, "nope.txt"},
		{"download a directory", download("dir"), http.StatusBadRequest, "dir"},
		{"download without a path", request{method: http.MethodGet, path: "/files"}, http.StatusBadRequest, "path"},
		{"upload without a path", octetUpload("", []byte("x")), http.StatusBadRequest, "path"},
		{"upload onto a directory", octetUpload("dir", []byte("x")), http.StatusBadRequest, "dir"},
		{"upload in pieces onto a directory", octetUpload("dir", make([]byte, bigFile)), http.StatusBadRequest, "dir"},
		{"upload of another type", request{method: http.MethodPost, path: "/files?path=x", contentType: "text/plain", body: strings.NewReader("x")}, http.StatusBadRequest, "octet-stream"},
		{"wrong token", download("nope.txt"), http.StatusNotFound, "not found"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "wrong token" {
				tt.req.token = "not-the-token"
			}
			msg := apiError(t, env.do(t, tt.req), tt.status)
			if !strings.Contains(msg, tt.says) {
				t.Fatalf("message %q does not mention %q", msg, tt.says)
			}
		})
	}
	if l := leftovers(t, env.workspace); len(l) > 0 {
		t.Fatalf("failed uploads left temporary files: %v", l)
	}
}

func TestFilesScopes(t *testing.T) {
	t.Parallel()
	readOnly := newEnv(t, auth.ScopeFilesRead)
	apiError(t, readOnly.do(t, octetUpload("x.txt", []byte("x"))), http.StatusForbidden)
	if _, err := os.Stat(filepath.Join(readOnly.workspace, "x.txt")); err == nil {
		t.Fatal("an upload without the write scope wrote the file")
	}
	writeOnly := newEnv(t, auth.ScopeFilesWrite)
	decodeEntries(t, writeOnly.do(t, octetUpload("y.txt", []byte("y"))))
	apiError(t, writeOnly.do(t, download("y.txt")), http.StatusForbidden)
}

func TestHealth(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	for _, port := range []string{"49983", "49999"} {
		res := env.do(t, request{method: http.MethodGet, path: "/health", port: port, token: "-"})
		if res.StatusCode != http.StatusNoContent {
			t.Errorf("port %s: /health answered %s, want 204", port, res.Status)
		}
	}
}

// failingReader gives n zero bytes, then fails: a client that breaks off
// its upload.
type failingReader struct{ n int }

func (r *failingReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, errors.New("the client gave up")
	}
	k := min(len(p), r.n)
	clear(p[:k])
	r.n -= k
	return k, nil
}

func TestUploadBrokenOffLeavesNothing(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	env.runner.finished = make(chan e2b.Op, 1)
	// More than the loopback's socket buffers hold, so that the gateway
	// has written the first chunk to the temporary file when the body
	// breaks.
	req := octetUpload("broken.bin", nil)
	req.body = &failingReader{n: bigFile}
	r, err := http.NewRequestWithContext(t.Context(), req.method, env.url+req.path, req.body)
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("E2b-Sandbox-Id", env.id)
	r.Header.Set("X-Access-Token", testToken)
	r.Header.Set("Content-Type", req.contentType)
	if res, err := http.DefaultClient.Do(r); err == nil {
		res.Body.Close()
		t.Fatalf("the broken upload answered %s", res.Status)
	}
	select {
	case <-env.runner.finished: // the upload's Do has returned: cleanup is done
	case <-t.Context().Done():
		t.Fatal(t.Context().Err())
	}
	if l := leftovers(t, env.workspace); len(l) > 0 {
		t.Fatalf("the broken upload left %v", l)
	}
	if _, err := os.Stat(filepath.Join(env.workspace, "broken.bin")); err == nil {
		t.Fatal("the broken upload created its target")
	}
}
