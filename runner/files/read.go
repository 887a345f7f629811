package files

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"
	"unicode/utf8"

	"github.com/sandgate/sandgate/runner/protocol"
)

// Read returns the content of a file: whole, a byte range (Offset/Limit)
// or a line range (StartLine/EndLine). A whole read of a file above the
// cap fails; a range read returns at most the cap and says whether it
// reached the end.
func (s *Service) Read(ctx context.Context, req protocol.ReadRequest) (protocol.ReadResult, error) {
	return s.ReadVia(ctx, req, openNonblocking)
}

// ReadVia is Read with the resolved absolute path opened by open instead
// of by this process: for the gateway, which reaches a workspace on its
// own host's disk and opens the file there (as the sandbox user, never
// through a symlink), so that both sides return the same result for the
// same bytes. open's error is reported as Read reports an open's.
func (s *Service) ReadVia(ctx context.Context, req protocol.ReadRequest, open func(path string) (*os.File, error)) (protocol.ReadResult, error) {
	p, err := s.resolve("read", req.Path)
	if err != nil {
		return protocol.ReadResult{}, err
	}
	if err := checkRead(p, req); err != nil {
		return protocol.ReadResult{}, err
	}
	if ctx.Err() != nil {
		return protocol.ReadResult{}, canceled("read", p)
	}
	f, fi, err := s.openChecked("read", p, p, open)
	if err != nil {
		return protocol.ReadResult{}, err
	}
	defer f.Close()

	limit := capAt(req.MaxBytes, s.opts.MaxReadBytes)
	var res protocol.ReadResult
	var data []byte
	switch {
	case req.StartLine > 0 || req.EndLine > 0:
		res, data, err = s.readLines(ctx, f, p, max(req.StartLine, 1), req.EndLine, limit)
	case req.Offset > 0 || req.Limit > 0:
		res, data, err = readRange(f, req.Offset, capAt(req.Limit, limit), req.Encoding != protocol.EncodingBase64)
	default:
		res, data, err = readWhole(f, p, fi.Size(), limit)
	}
	if err != nil {
		return protocol.ReadResult{}, s.fsError("read", p, err)
	}
	res.Path = p
	res.Size = max(res.Size, fi.Size())
	encodeContent(&res, data, req.Encoding, req.Raw)
	return res, nil
}

// checkRead rejects requests whose fields contradict each other before any
// file is opened, so the message is about the request, not the file.
func checkRead(p string, req protocol.ReadRequest) error {
	switch {
	case req.Encoding != "" && req.Encoding != protocol.EncodingText && req.Encoding != protocol.EncodingBase64:
		return protocol.Errorf(protocol.CodeInvalid,
			"read %s: unknown encoding %q; use \"text\" or \"base64\"", p, req.Encoding)
	case req.Offset < 0 || req.Limit < 0 || req.StartLine < 0 || req.EndLine < 0 || req.MaxBytes < 0:
		return protocol.Errorf(protocol.CodeInvalid,
			"read %s: offset, limit, start_line, end_line and max_bytes must not be negative", p)
	case (req.StartLine > 0 || req.EndLine > 0) && (req.Offset > 0 || req.Limit > 0):
		return protocol.Errorf(protocol.CodeInvalid,
			"read %s: pass either offset/limit (a byte range) or start_line/end_line (a line range), not both", p)
	case req.EndLine > 0 && req.StartLine > req.EndLine:
		return protocol.Errorf(protocol.CodeInvalid,
			"read %s: start_line %d is after end_line %d; lines are 1-based and the range is inclusive",
			p, req.StartLine, req.EndLine)
	}
	return nil
}

// OpenVia opens the file at path, resolved as Read resolves it, with
// open, and returns it with its FileInfo when it is a regular file: for
// the gateway, which streams a file of a workspace on its own disk
// instead of reading it through the runner (see ReadVia).
func (s *Service) OpenVia(path string, open func(path string) (*os.File, error)) (*os.File, fs.FileInfo, error) {
	p, err := s.resolve("read", path)
	if err != nil {
		return nil, nil, err
	}
	return s.openChecked("read", p, p, open)
}

// openFile opens path (which name is shown as) for reading and checks that
// it is a regular file.
func (s *Service) openFile(op, name, path string) (*os.File, fs.FileInfo, error) {
	return s.openChecked(op, name, path, openNonblocking)
}

// openChecked opens path with open and returns it when it is a regular
// file; else it closes it and says what it is.
func (s *Service) openChecked(op, name, path string, open func(string) (*os.File, error)) (*os.File, fs.FileInfo, error) {
	f, err := open(path)
	if errors.Is(err, syscall.ENXIO) {
		// A socket cannot be opened at all (nor a device without a
		// driver): say what it is, as for anything else not a file.
		if fi, serr := os.Stat(path); serr == nil && !fi.Mode().IsRegular() {
			return nil, nil, protocol.Errorf(protocol.CodeInvalid,
				"%s %s: is a %s, not a regular file; only regular files can be read or edited", op, name, describe(fi.Mode()))
		}
	}
	if err != nil {
		return nil, nil, s.fsError(op, name, err)
	}
	fi, err := s.checkOpened(op, name, f)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// openNonblocking opens path for reading. O_NONBLOCK keeps a named pipe
// from blocking the open until a writer appears; it changes nothing for
// regular files.
func openNonblocking(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

// checkOpened returns the FileInfo of f, opened as name, when it is a
// regular file, and an error that says what it is otherwise. It does not
// close f.
func (s *Service) checkOpened(op, name string, f *os.File) (fs.FileInfo, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, s.fsError(op, name, err)
	}
	if fi.IsDir() {
		return nil, protocol.Errorf(protocol.CodeIsDir,
			"%s %s: is a directory; use list_directory to see its entries", op, name)
	}
	if !fi.Mode().IsRegular() {
		return nil, protocol.Errorf(protocol.CodeInvalid,
			"%s %s: is a %s, not a regular file; only regular files can be read or edited", op, name, describe(fi.Mode()))
	}
	return fi, nil
}

// readWhole reads all of f, failing when it is above limit. The size from
// stat is checked first to fail fast, and the read itself is bounded too,
// because files in /proc report size 0 and files can grow.
func readWhole(f *os.File, p string, size, limit int64) (protocol.ReadResult, []byte, error) {
	hint := "read a range with offset/limit or start_line/end_line"
	if size > limit {
		return protocol.ReadResult{}, nil, tooLarge("read", p, "file", size, limit, "read", hint)
	}
	data, err := readAtMost(f, size, limit)
	if err != nil {
		return protocol.ReadResult{}, nil, err
	}
	if int64(len(data)) > limit {
		return protocol.ReadResult{}, nil, tooLarge("read", p, "file", int64(len(data)), limit, "read", hint)
	}
	return protocol.ReadResult{Size: int64(len(data)), EOF: true}, data, nil
}

// readAtMost reads r to its end or to limit+1 bytes, whichever comes
// first. It starts with room for size bytes (what stat said, 0 for files
// in /proc) and one more, so that a file whose size stat knows takes one
// read plus the one that sees its end.
func readAtMost(r io.Reader, size, limit int64) ([]byte, error) {
	data := make([]byte, 0, min(size, limit)+1)
	for int64(len(data)) <= limit {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)] // grow as append does
		}
		n, err := r.Read(data[len(data):min(int64(cap(data)), limit+1)])
		data = data[:len(data)+n]
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return nil, err
		}
	}
	return data, nil
}

// readRange reads at most n bytes at off with ReadAt, so only the range is
// ever in memory. With text set, a UTF-8 sequence cut by the end of the
// range is left for the next read instead of forcing base64.
func readRange(f *os.File, off, n int64, text bool) (protocol.ReadResult, []byte, error) {
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.NewSectionReader(f, off, n)); err != nil {
		return protocol.ReadResult{}, nil, err
	}
	data := buf.Bytes()
	eof := int64(len(data)) < n
	if !eof {
		// Full range: the file ends here only if nothing follows it.
		var probe [1]byte
		_, err := f.ReadAt(probe[:], off+n)
		eof = err == io.EOF
	}
	if k := partialRune(data); text && !eof && k < len(data) {
		// Never trim to nothing: an empty, non-final read would have the
		// caller ask for the same range forever.
		data = data[:len(data)-k]
	}
	res := protocol.ReadResult{Offset: off, EOF: eof}
	if len(data) > 0 {
		// A lower bound on the size, for files whose stat says 0 (/proc).
		res.Size = off + int64(len(data))
	}
	return res, data, nil
}

// partialRune returns how many trailing bytes of b are an incomplete UTF-8
// sequence that the rest of the file may complete, or 0.
func partialRune(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if !utf8.RuneStart(b[i]) {
			continue
		}
		if !utf8.FullRune(b[i:]) && utf8.Valid(b[:i]) {
			return len(b) - i
		}
		return 0
	}
	return 0
}

// Inline moves a raw read's bytes (res.Data) into res.Content, rendered
// as res.Encoding says: for content too small to be worth a payload.
func Inline(res *protocol.ReadResult) {
	res.Content, res.Data = protocol.RenderContent(res.Data, res.Encoding), nil
}

// encodeContent stores data in res as text when it is valid UTF-8 and the
// caller did not ask for base64, else as base64, and says which; with raw,
// it stores the bytes themselves and only says how to render them.
func encodeContent(res *protocol.ReadResult, data []byte, want string, raw bool) {
	res.Bytes = int64(len(data))
	res.Encoding = protocol.EncodingBase64
	if want != protocol.EncodingBase64 && utf8.Valid(data) {
		res.Encoding = protocol.EncodingText
	}
	switch {
	case raw:
		res.Data = data
	case res.Encoding == protocol.EncodingText:
		res.Content = string(data)
	default:
		res.Content = base64.StdEncoding.EncodeToString(data)
	}
}
