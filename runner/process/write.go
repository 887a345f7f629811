package process

import (
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandgate/sandgate/runner/protocol"
)

// writeWait bounds a Write to a process that does not read its stdin, so
// that the caller gets an answer instead of hanging on a full pipe.
const writeWait = 10 * time.Second

// Write writes req.Data to a background process's stdin, in the order
// Writes arrive, and closes stdin afterwards when req.Close is set.
// Closing an already closed stdin is not an error; writing to it is.
func (m *Manager) Write(req protocol.ProcessWriteRequest) (protocol.ProcessInfo, error) {
	b, err := m.get(req.ID)
	if err != nil {
		return protocol.ProcessInfo{}, err
	}
	select {
	case b.stdin <- struct{}{}:
		defer func() { <-b.stdin }()
	case <-time.After(writeWait):
		return protocol.ProcessInfo{}, protocol.Errorf(protocol.CodeUnavailable,
			"stdin of process %s is busy: it has not read earlier input for %s", b.id, formatDuration(writeWait))
	}
	switch {
	case b.stdinClosed && len(req.Data) == 0 && req.Close:
		return b.info(), nil
	case b.exited():
		return protocol.ProcessInfo{}, protocol.Errorf(protocol.CodeInvalid, "process %s has exited; its stdin is closed", b.id)
	case b.stdinClosed:
		return protocol.ProcessInfo{}, protocol.Errorf(protocol.CodeInvalid, "stdin of process %s is closed", b.id)
	}
	if len(req.Data) > 0 {
		_ = b.p.stdin.SetWriteDeadline(time.Now().Add(writeWait))
		n, err := b.p.stdin.Write(req.Data)
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			return protocol.ProcessInfo{}, protocol.Errorf(protocol.CodeUnavailable,
				"process %s is not reading its stdin: %d of %d bytes written in %s", b.id, n, len(req.Data), formatDuration(writeWait))
		case errors.Is(err, unix.EPIPE), errors.Is(err, os.ErrClosed):
			return protocol.ProcessInfo{}, protocol.Errorf(protocol.CodeInvalid, "process %s closed its stdin or exited", b.id)
		case err != nil:
			return protocol.ProcessInfo{}, protocol.Errorf(protocol.CodeInternal, "write to stdin of %s: %v", b.id, err)
		}
	}
	if req.Close {
		b.p.stdin.Close()
		b.stdinClosed = true
	}
	return b.info(), nil
}
