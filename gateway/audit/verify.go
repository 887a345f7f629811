package audit

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
)

// Report is the outcome of Verify.
type Report struct {
	// Records is the number of records that verified, counted from the
	// first line up to the first broken one.
	Records int
	// FirstBroken is the 1-based line number of the first line that does
	// not verify, or 0 if the whole input does.
	FirstBroken int
	// Reason says why FirstBroken does not verify; "" if none.
	Reason string
	// LastHash is the hash of the last record that verified. Removing
	// records from the end of a log leaves a valid chain; comparing
	// LastHash with a value kept elsewhere (a log shipper, a ticket)
	// detects that.
	LastHash string
}

// OK reports whether every line verified.
func (r Report) OK() bool { return r.FirstBroken == 0 }

// errLineTooLong is returned by readLine for a line above MaxRecordSize.
var errLineTooLong = errors.New("line too long")

// Verify reads a log and checks, line by line, that each line is a record
// in canonical form whose hash matches its content, that the first record
// has seq 1 and an empty prev_hash, that each later seq is the previous
// one plus 1 and that each prev_hash is the previous record's hash. It
// stops at the first line that fails and reports it. An edited record is
// reported at its own line, or, if its hash was recomputed too, at the
// next line; a deleted or moved line at the first line whose seq is out
// of order.
//
// The error is non-nil only if reading r fails; a broken log is a Report
// with FirstBroken set.
func Verify(r io.Reader) (Report, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var rep Report
	var prevSeq uint64
	var buf []byte
	for n := 1; ; n++ {
		line, err := readLine(br, buf[:0])
		buf = line
		switch {
		case err == io.EOF && len(line) == 0:
			return rep, nil
		case err == io.EOF:
			return rep.broken(n, "last line is incomplete (no newline): a write was interrupted"), nil
		case errors.Is(err, errLineTooLong):
			return rep.broken(n, fmt.Sprintf("line longer than %d bytes", MaxRecordSize)), nil
		case err != nil:
			return rep, fmt.Errorf("read line %d: %w", n, err)
		}
		e, reason := checkRecord(line)
		switch {
		case reason != "":
		case e.Seq != prevSeq+1:
			reason = fmt.Sprintf("seq %d follows seq %d, want %d (records deleted, inserted or reordered)", e.Seq, prevSeq, prevSeq+1)
		case e.PrevHash != rep.LastHash:
			reason = fmt.Sprintf("prev_hash %q is not the hash of the previous record %q", e.PrevHash, rep.LastHash)
		}
		if reason != "" {
			return rep.broken(n, reason), nil
		}
		rep.Records++
		prevSeq, rep.LastHash = e.Seq, e.Hash
	}
}

func (r Report) broken(line int, reason string) Report {
	r.FirstBroken, r.Reason = line, reason
	return r
}

// VerifyFile runs Verify on the file at path. It takes no lock: verifying
// a log that a gateway is appending to may report the record being written
// as an incomplete last line.
func VerifyFile(path string) (Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return Report{}, fmt.Errorf("open audit log: %w", err)
	}
	defer f.Close()
	return Verify(f)
}

// readLine appends the next line of br, without its newline, to buf. At
// the end of input it returns io.EOF, with the bytes of an unterminated
// last line if there is one. A line above MaxRecordSize (newline
// included) gives errLineTooLong.
func readLine(br *bufio.Reader, buf []byte) ([]byte, error) {
	for {
		frag, err := br.ReadSlice('\n')
		if len(buf)+len(frag) > MaxRecordSize {
			return buf, errLineTooLong
		}
		buf = append(buf, frag...)
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err != nil:
			return buf, err
		}
		return buf[:len(buf)-1], nil
	}
}
