package files

import (
	"context"
	"encoding/base64"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sandgate/sandgate/runner/protocol"
)

// Write replaces or creates a whole file atomically, creating missing
// parent directories. A symlink at the path is written through, so the
// link survives and its target gets the content. With req.Append it adds
// the content to the end of the file instead (see appendFile).
func (s *Service) Write(ctx context.Context, req protocol.WriteRequest) (protocol.WriteResult, error) {
	p, err := s.resolve("write", req.Path)
	if err != nil {
		return protocol.WriteResult{}, err
	}
	content := req.Data
	if content == nil {
		content = []byte(req.Content)
	}
	data, err := s.decodeContent(p, content, req.Encoding)
	if err != nil {
		return protocol.WriteResult{}, err
	}
	perm, err := parseMode("write", p, req.Mode, 0)
	if err != nil {
		return protocol.WriteResult{}, err
	}
	if ctx.Err() != nil {
		return protocol.WriteResult{}, canceled("write", p)
	}
	if req.Append {
		return s.appendFile(p, data, perm)
	}
	// No cancellation past this point: the write is atomic and short, and
	// stopping between its steps would only leave a temporary file.
	target, existing, err := s.writeTarget("write", p)
	if err != nil {
		return protocol.WriteResult{}, err
	}
	if perm == 0 {
		perm = 0o644
		if existing != nil {
			perm = permMode(unixPerm(existing.Mode()))
		}
	}
	if existing == nil {
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return protocol.WriteResult{}, s.fsError("write", p, err)
		}
	}
	if err := replaceFile(target, data, perm, existing != nil); err != nil {
		return protocol.WriteResult{}, s.fsError("write", p, err)
	}
	return protocol.WriteResult{Path: p, Bytes: int64(len(data)), Created: existing == nil, Mode: unixPerm(perm)}, nil
}

// writeTarget follows symlinks at p and returns the file a write lands on
// and its current info, nil when it does not exist yet. Directories and
// special files are refused: replacing them with a regular file is never
// what a write meant.
func (s *Service) writeTarget(op, p string) (string, fs.FileInfo, error) {
	target, err := followLinks(p)
	if err != nil {
		return "", nil, s.fsError(op, p, err)
	}
	fi, err := os.Lstat(target)
	if errors.Is(err, fs.ErrNotExist) {
		return target, nil, nil
	}
	if err != nil {
		return "", nil, s.fsError(op, p, err)
	}
	if fi.IsDir() {
		return "", nil, protocol.Errorf(protocol.CodeIsDir,
			"%s %s: is a directory; pass the path of a file inside it", op, p)
	}
	if !fi.Mode().IsRegular() {
		return "", nil, protocol.Errorf(protocol.CodeInvalid,
			"%s %s: is a %s, not a regular file; only regular files can be written", op, p, describe(fi.Mode()))
	}
	return target, fi, nil
}

// decodeContent returns the bytes to write, checking encoding and the
// write cap. Base64 with and without padding is accepted, since agents
// produce both.
func (s *Service) decodeContent(p string, content []byte, encoding string) ([]byte, error) {
	limit := s.opts.MaxWriteBytes
	hint := "write a smaller file, or build it in parts with a shell command"
	switch encoding {
	case "", protocol.EncodingText:
		if int64(len(content)) > limit {
			return nil, tooLarge("write", p, "content", int64(len(content)), limit, "write", hint)
		}
		return content, nil
	case protocol.EncodingBase64:
		if n := int64(base64.StdEncoding.DecodedLen(len(content))); n > limit+2 {
			// Checked before decoding so an oversized payload is not
			// decoded just to be refused; +2 allows for padding.
			return nil, tooLarge("write", p, "content", n, limit, "write", hint)
		}
		data, err := decodeBase64(base64.StdEncoding, content)
		if err != nil {
			var rawErr error
			if data, rawErr = decodeBase64(base64.RawStdEncoding, content); rawErr != nil {
				return nil, protocol.Errorf(protocol.CodeInvalid,
					"write %s: content is not valid base64 (%v); send standard base64, or use encoding \"text\"", p, err)
			}
		}
		if int64(len(data)) > limit {
			return nil, tooLarge("write", p, "content", int64(len(data)), limit, "write", hint)
		}
		return data, nil
	}
	return nil, protocol.Errorf(protocol.CodeInvalid,
		"write %s: unknown encoding %q; use \"text\" or \"base64\"", p, encoding)
}

// decodeBase64 decodes src with enc, as enc.DecodeString would.
func decodeBase64(enc *base64.Encoding, src []byte) ([]byte, error) {
	dst := make([]byte, enc.DecodedLen(len(src)))
	n, err := enc.Decode(dst, src)
	return dst[:n], err
}
