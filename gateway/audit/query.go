package audit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// Query selects records for FileSink.Query.
type Query struct {
	// Issuer and Subject are required: a query only ever returns the
	// records of one principal, the caller's own.
	Issuer, Subject string
	// Session, if set, keeps only records of that MCP session.
	Session string
	// Limit is the most records returned: 0 means DefaultQueryLimit; above
	// MaxQueryLimit means MaxQueryLimit.
	Limit int
}

// Query limits.
const (
	DefaultQueryLimit = 50
	MaxQueryLimit     = 1000
)

// Query returns the newest records matching q, oldest first (newest last).
// It sees only durable records: those whose Append has returned or is
// about to.
//
// Cost: Query reads and decodes the whole file on every call, O(file
// size) time and O(Limit) memory; it does not check hashes (VerifyFile
// does). That is fine for an operator or a user looking at recent calls,
// not for a hot path; rotate the log, or add an index, if it grows large.
func (s *FileSink) Query(ctx context.Context, q Query) ([]Event, error) {
	if q.Issuer == "" || q.Subject == "" {
		return nil, fmt.Errorf("%w: query needs issuer and subject", ErrInvalid)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultQueryLimit
	}
	limit = min(limit, MaxQueryLimit)
	s.mu.RLock()
	closed := s.closed
	s.mu.RUnlock()
	if closed {
		return nil, ErrClosed
	}
	f, err := os.Open(s.path)
	if err != nil {
		return nil, fmt.Errorf("%w: open audit log: %w", ErrUnavailable, err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(io.LimitReader(f, s.durable.Load()), 64<<10)
	ring := make([]Event, 0, limit)
	next := 0 // where the next match goes once ring is full
	var buf []byte
	for n := 1; ; n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("query audit log: %w", err)
			}
		}
		line, err := readLine(br, buf[:0])
		buf = line
		if err == io.EOF && len(line) == 0 {
			break
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: read %s line %d: %w", ErrCorrupt, s.path, n, err)
		}
		var e Event
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("%w: %s line %d: %w", ErrCorrupt, s.path, n, err)
		}
		if e.Principal.Issuer != q.Issuer || e.Principal.Subject != q.Subject ||
			(q.Session != "" && e.Session != q.Session) {
			continue
		}
		if len(ring) < limit {
			ring = append(ring, e)
			continue
		}
		ring[next] = e
		next = (next + 1) % limit
	}
	out := make([]Event, 0, len(ring))
	out = append(out, ring[next:]...)
	return append(out, ring[:next]...), nil
}

// ReadFile returns every record of the log at path, oldest first, without
// checking the chain (VerifyFile does that). It is for tools and tests
// that inspect a log another process writes: a last line without its
// newline is a record being written, and is left for the next read.
func ReadFile(path string) ([]Event, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read audit log: %w", err)
	}
	b = b[:bytes.LastIndexByte(b, '\n')+1]
	var out []Event
	dec := json.NewDecoder(bytes.NewReader(b))
	for dec.More() {
		var e Event
		if err := dec.Decode(&e); err != nil {
			return out, fmt.Errorf("decode audit record %d of %s: %w", len(out)+1, path, err)
		}
		out = append(out, e)
	}
	return out, nil
}
