package e2b

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/runner/protocol"
)

// uploadChunk is how much of an upload one file.write carries, and so
// what the gateway holds per upload at a time: far below the runner's
// 64 MiB write cap and, base64-encoded for an old runner, the frame cap.
const uploadChunk = 8 << 20

// cleanupTimeout bounds removing a failed upload's temporary file.
const cleanupTimeout = 10 * time.Second

// formNameUnescaper undoes the escaping HTML's FormData applies to a
// part's filename.
var formNameUnescaper = strings.NewReplacer("%22", `"`, "%0D", "\r", "%0A", "\n")

// uploadFile writes src to p in the sandbox as one runner call. size is
// the byte count when known (for the audit record), else -1.
func (a *API) uploadFile(ctx context.Context, rn Runner, p string, src io.Reader, size int64) (writeInfo, error) {
	if err := checkPath(p); err != nil {
		return writeInfo{}, err
	}
	summary := map[string]any{"path": p}
	if size >= 0 {
		summary["bytes"] = size
	}
	var info writeInfo
	op := Op{Name: opUpload, Scope: auth.ScopeFilesWrite, Summary: summary}
	err := rn.Do(ctx, op, func(ctx context.Context, c *protocol.Client) error {
		written, err := a.writeStream(ctx, c, p, src)
		info = writeInfo{Name: path.Base(written), Type: "file", Path: written}
		return err
	})
	return info, err
}

// writeStream writes src to p and returns the path the runner wrote
// (absolute). Content that fits in one chunk is one atomic file.write.
// Larger content is written to a temporary name beside p, a chunk at a
// time (the first replaces, the rest append), and moved over p at the
// end, so p is never seen half-written and a failed upload leaves p as
// it was. The sandbox's disk bounds the upload: the runner's "no space"
// error ends it, and the temporary file is removed.
func (a *API) writeStream(ctx context.Context, c *protocol.Client, p string, src io.Reader) (written string, retErr error) {
	chunks := chunker{r: bufio.NewReader(src), buf: make([]byte, uploadChunk)}
	chunk, more, err := chunks.next()
	if err != nil {
		return "", fmt.Errorf("read the upload for %s: %v: %w", p, err, ErrInvalid)
	}
	if !more {
		res, err := writeChunk(ctx, c, p, chunk, false)
		return res.Path, err
	}
	if !c.Supports(protocol.FeatureAppend) {
		return "", fmt.Errorf("upload %s: files above %d MiB are written in pieces, which this sandbox's runner is too old to do; create a new sandbox (its runner is current), or upload files of at most %d MiB: %w",
			p, uploadChunk>>20, uploadChunk>>20, ErrUnsupported)
	}
	tmp := tempName(p)
	defer func() {
		if retErr != nil {
			a.removeTemp(ctx, c, tmp)
		}
	}()
	for appendTo := false; ; appendTo = true {
		if _, err := writeChunk(ctx, c, tmp, chunk, appendTo); err != nil {
			return "", fmt.Errorf("upload %s: %w", p, err)
		}
		if !more {
			break
		}
		if chunk, more, err = chunks.next(); err != nil {
			return "", fmt.Errorf("read the upload for %s: %v: %w", p, err, ErrInvalid)
		}
	}
	var fi protocol.FileInfo
	if err := c.Call(ctx, protocol.OpFileMove, protocol.MoveRequest{From: tmp, To: p, Overwrite: true}, &fi); err != nil {
		return "", fmt.Errorf("upload %s: put the file in place: %w", p, err)
	}
	return fi.Path, nil
}

// writeChunk writes data to p, replacing it or appending to it: as a
// payload to a runner that takes them, else base64 in the parameters
// (the content is arbitrary bytes, which a JSON string cannot hold).
func writeChunk(ctx context.Context, c *protocol.Client, p string, data []byte, appendTo bool) (protocol.WriteResult, error) {
	req := protocol.WriteRequest{Path: p, Append: appendTo}
	var res protocol.WriteResult
	if c.Payloads() && len(data) >= protocol.PayloadMinBytes {
		_, err := c.CallPayload(ctx, protocol.OpFileWrite, req, data, &res)
		return res, err
	}
	req.Encoding, req.Content = protocol.EncodingBase64, base64.StdEncoding.EncodeToString(data)
	err := c.Call(ctx, protocol.OpFileWrite, req, &res)
	return res, err
}

// removeTemp removes a failed upload's temporary file. It runs even when
// the request's context has ended (a client that went away is the most
// common failure), with its own timeout; a runner that is gone leaves
// the file, hidden and named for the upload.
func (a *API) removeTemp(ctx context.Context, c *protocol.Client, tmp string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	err := c.Call(ctx, protocol.OpFileRemove, protocol.RemoveRequest{Path: tmp}, nil)
	if err != nil && protocol.CodeOf(err) != protocol.CodeNotFound {
		a.log.Warn("e2b upload: remove the temporary file", "path", tmp, "error", err)
	}
}

// tempName is a hidden name beside p for an upload in progress: in the
// same directory, so that the final move is a rename on one file system.
func tempName(p string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return path.Join(path.Dir(p), "."+path.Base(p)+".upload-"+hex.EncodeToString(b[:]))
}

// chunker cuts a stream into chunks of len(buf) bytes, reusing buf: a
// chunk is valid until the next call.
type chunker struct {
	r   *bufio.Reader
	buf []byte
}

// next returns the next chunk and whether more follow it. The last
// chunk may be short or empty (an empty upload is an empty file).
//
// Only the body's own io.EOF ends it. io.ReadFull would not do: it turns
// a short clean end into io.ErrUnexpectedEOF, the very error a body cut
// off mid-upload gives (a broken chunked encoding, a Content-Length not
// reached), so a broken upload would be taken for a complete, shorter
// file and put in place.
func (c *chunker) next() (chunk []byte, more bool, err error) {
	n := 0
	for n < len(c.buf) {
		m, err := c.r.Read(c.buf[n:])
		n += m
		if err == io.EOF {
			return c.buf[:n], false, nil
		}
		if err != nil {
			return nil, false, err
		}
	}
	if _, err := c.r.Peek(1); err == io.EOF {
		return c.buf[:n], false, nil
	} else if err != nil {
		return nil, false, err
	}
	return c.buf[:n], true, nil
}
