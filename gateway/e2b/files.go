package e2b

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"unicode/utf8"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/runner/protocol"
)

// downloadChunk is how much of a file one file.read brings, and so what
// the gateway holds per download at a time: under the runner's read cap
// (10 MiB) and, base64-encoded for an old runner, the frame cap.
const downloadChunk = 4 << 20

// filesRoutes serves envd's HTTP file transfer (/files) and its health
// check. The username parameter the SDKs send is accepted and ignored:
// a Sandgate sandbox has one user, and relative paths are relative to
// its workspace (E2B's are relative to the user's home).
func (a *API) filesRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /files", a.download)
	mux.HandleFunc("POST /files", a.upload)
	mux.HandleFunc("GET /health", health)
}

// health answers the SDKs' liveness probe as envd does: 204, without a
// token and without a runner call. It says that the gateway is up, not
// that a sandbox exists; every other route answers that.
func health(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }

// download streams a file to the client in downloadChunk pieces, each
// one file.read, so that neither the gateway nor the runner ever holds
// the whole file.
func (a *API) download(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Query().Get("path")
	if path == "" {
		replyErrorStatus(w, http.StatusBadRequest, "the path query parameter is missing; pass the file's path, e.g. /files?path=/workspace/data.csv")
		return
	}
	if err := checkPath(path); err != nil {
		replyError(w, err)
		return
	}
	rn, err := a.open(r.Context(), r.Header, opDownload)
	if err != nil {
		replyError(w, err)
		return
	}
	started := false
	op := Op{Name: opDownload, Scope: auth.ScopeFilesRead, ReadOnly: true, Summary: map[string]any{"path": path}}
	err = rn.Do(r.Context(), op, func(ctx context.Context, c *protocol.Client) error {
		if hr, ok := rn.(HostReader); ok {
			if f, fi, err := hr.OpenRegular(path); err == nil {
				defer f.Close()
				return sendOpenFile(f, fi.Size(), path, w, &started)
			}
		}
		return sendFile(ctx, c, path, w, &started)
	})
	switch {
	case err == nil:
	case !started:
		replyError(w, err)
	default:
		// The status and part of the body are gone; cutting the
		// connection is the only way left to tell the client that the
		// file it got is incomplete.
		a.log.Warn("e2b download cut short", "sandbox_id", rn.ID(), "error", err)
		panic(http.ErrAbortHandler)
	}
}

// sendFile writes path to w. The first read's Size is the
// Content-Length: a file that grows meanwhile is sent as it was at that
// size, and one that shrinks is an error, so the client never gets a
// silently different length than it was promised. started reports
// whether the response's header has been written.
func sendFile(ctx context.Context, c *protocol.Client, path string, w http.ResponseWriter, started *bool) error {
	var off, size int64
	for {
		data, res, err := readChunk(ctx, c, path, off)
		if err != nil {
			return err
		}
		if !*started {
			size = res.Size
			startDownload(w, size, started)
		}
		if rest := size - off; int64(len(data)) > rest {
			data = data[:rest]
		}
		if _, err := w.Write(data); err != nil {
			return fmt.Errorf("send %s to the client: %w", path, err)
		}
		off += int64(len(data))
		if off >= size {
			return nil
		}
		if res.EOF || len(data) == 0 {
			return fmt.Errorf("download %s: the file shrank to %d bytes while it was sent (it had %d); download it again", path, off, size)
		}
	}
}

// sendOpenFile writes the first size bytes of f, a regular file opened
// on the gateway's own disk, to w: in one copy, which is the kernel's
// sendfile where the connection allows. As in sendFile, a file that
// grows is sent at size and one that shrinks is an error.
func sendOpenFile(f *os.File, size int64, path string, w http.ResponseWriter, started *bool) error {
	startDownload(w, size, started)
	n, err := io.CopyN(w, f, size)
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("download %s: the file shrank to %d bytes while it was sent (it had %d); download it again", path, n, size)
	}
	if err != nil {
		return fmt.Errorf("send %s to the client: %w", path, err)
	}
	return nil
}

// startDownload writes the response's header for a file of size bytes.
func startDownload(w http.ResponseWriter, size int64, started *bool) {
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
	w.WriteHeader(http.StatusOK)
	*started = true
}

// readChunk reads up to downloadChunk bytes of path at off: as a payload
// from a runner that gives them, else base64 in the result.
func readChunk(ctx context.Context, c *protocol.Client, path string, off int64) ([]byte, protocol.ReadResult, error) {
	req := protocol.ReadRequest{Path: path, Offset: off, Limit: downloadChunk, Encoding: protocol.EncodingBase64, Raw: c.Payloads()}
	var res protocol.ReadResult
	data, err := c.CallPayload(ctx, protocol.OpFileRead, req, nil, &res)
	if err != nil || data != nil {
		return data, res, err
	}
	if res.Encoding != protocol.EncodingBase64 {
		return []byte(res.Content), res, nil
	}
	data, err = base64.StdEncoding.DecodeString(res.Content)
	if err != nil {
		return nil, res, fmt.Errorf("decode %s's content from the runner: %w", path, err)
	}
	return data, res, nil
}

// checkPath refuses a path that is not UTF-8. Paths cross the runner
// protocol as JSON, whose encoder replaces each invalid byte with U+FFFD:
// the file read or written would be another one than the client named.
func checkPath(p string) error {
	if !utf8.ValidString(p) {
		return fmt.Errorf("path %q is not valid UTF-8; name the file in UTF-8 (percent-encode its bytes in the URL): %w", p, ErrInvalid)
	}
	return nil
}
