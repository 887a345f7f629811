package files

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"

	"github.com/sandgate/sandgate/runner/protocol"
)

// ctxCheckEvery is how many lines or chunks pass between checks of ctx in
// loops over file content: often enough to stop within milliseconds,
// rarely enough to cost nothing.
const ctxCheckEvery = 1024

// lineWindow collects lines start..end (end 0: to the end) of a stream,
// whole lines only, at most limit bytes.
type lineWindow struct {
	start, end int
	limit      int64

	out   []byte
	first int64 // file offset of out[0]; -1 before the first kept line
	last  int   // number of the last line kept whole
	full  bool  // the cap stopped collection
}

// readLines streams f once: it keeps the requested lines, up to the cap and
// only whole lines, and counts the rest so TotalLines is exact. Memory is
// bounded by the cap plus the bufio buffer, whatever the file size.
func (s *Service) readLines(ctx context.Context, f *os.File, p string, start, end int, limit int64) (protocol.ReadResult, []byte, error) {
	w := &lineWindow{start: start, end: end, limit: limit, first: -1}
	br := bufio.NewReaderSize(f, 64<<10)
	var (
		line    = 1 // number of the line being read
		off     int64
		lineOff int64 // offset where that line starts
		mark    int   // len(w.out) where that line starts
	)
	for i := 0; ; i++ {
		if i%ctxCheckEvery == 0 && ctx.Err() != nil {
			return protocol.ReadResult{}, nil, ctx.Err()
		}
		if w.full || (end > 0 && line > end) {
			break
		}
		chunk, err := br.ReadSlice('\n')
		if err := w.add(p, line, lineOff, mark, chunk); err != nil {
			return protocol.ReadResult{}, nil, err
		}
		off += int64(len(chunk))
		if bytes.HasSuffix(chunk, []byte{'\n'}) || (err == io.EOF && off > lineOff) {
			if !w.full && w.keeps(line) {
				w.last = line
			}
			line, lineOff, mark = line+1, off, len(w.out)
		}
		if err == io.EOF {
			break
		}
		if err != nil && err != bufio.ErrBufferFull {
			return protocol.ReadResult{}, nil, err
		}
	}
	rest, err := countLines(ctx, br, off > lineOff)
	if err != nil {
		return protocol.ReadResult{}, nil, err
	}
	total := line - 1 + rest
	if start > max(total, 1) {
		return protocol.ReadResult{}, nil, protocol.Errorf(protocol.CodeInvalid,
			"read %s: start_line %d is past the end of the file, which has %d lines", p, start, total)
	}
	return w.result(total, off), w.out, nil
}

// keeps reports whether line n is in the requested range.
func (w *lineWindow) keeps(n int) bool {
	return n >= w.start && (w.end == 0 || n <= w.end)
}

// add appends chunk, part of line n starting at lineOff (out index mark),
// when the line is wanted. A line that does not fit is dropped whole; a
// first line that alone exceeds the cap is an error that says how to read
// it instead.
func (w *lineWindow) add(p string, n int, lineOff int64, mark int, chunk []byte) error {
	if w.full || !w.keeps(n) || len(chunk) == 0 {
		return nil
	}
	if w.first < 0 {
		w.first = lineOff
	}
	w.out = append(w.out, chunk...)
	if int64(len(w.out)) <= w.limit {
		return nil
	}
	if mark == 0 {
		return protocol.Errorf(protocol.CodeTooLarge,
			"read %s: line %d is longer than the %s read cap; read it as a byte range with offset=%d and limit",
			p, n, formatSize(w.limit), lineOff)
	}
	w.out, w.full = w.out[:mark], true
	return nil
}

// result describes the collected window in a file of total lines, of
// which off bytes were read before counting.
func (w *lineWindow) result(total int, off int64) protocol.ReadResult {
	res := protocol.ReadResult{TotalLines: total, Size: off, EOF: w.last == total}
	if w.last >= w.start {
		res.StartLine, res.EndLine, res.Offset = w.start, w.last, w.first
	} else {
		// Nothing kept (an empty file): point at the end, like a byte
		// read past the end.
		res.Offset, res.EOF = off, true
	}
	return res
}

// countLines counts the lines left in br. pending says the current line
// already has bytes, so it counts even if no newline follows.
func countLines(ctx context.Context, br *bufio.Reader, pending bool) (int, error) {
	buf := make([]byte, 64<<10)
	n := 0
	for i := 0; ; i++ {
		if i%ctxCheckEvery == 0 && ctx.Err() != nil {
			return 0, ctx.Err()
		}
		k, err := br.Read(buf)
		if k > 0 {
			n += bytes.Count(buf[:k], []byte{'\n'})
			pending = buf[k-1] != '\n'
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	if pending {
		n++
	}
	return n, nil
}
