package process

import "github.com/sandgate/sandgate/runner/protocol"

const defaultReadBytes = 256 << 10

// Output returns a background process's output from req.Offset, a position
// in its combined log of stdout and stderr: at most req.MaxBytes (default
// 256 KiB, at most the 1 MiB window) split into the two streams. Output
// older than the window is gone; Dropped says how much of it lay between
// req.Offset and what is returned. Reading from NextOffset continues
// without gaps or repeats; More says whether output is already waiting
// there.
func (m *Manager) Output(req protocol.ProcessOutputRequest) (protocol.ProcessOutput, error) {
	b, err := m.get(req.ID)
	if err != nil {
		return protocol.ProcessOutput{}, err
	}
	n := req.MaxBytes
	switch {
	case n < 0:
		return protocol.ProcessOutput{}, protocol.Errorf(protocol.CodeInvalid, "max_bytes must not be negative")
	case n == 0:
		n = defaultReadBytes
	}
	n = min(n, logWindow)
	total := b.log.bytes()
	if req.Offset < 0 || req.Offset > total {
		return protocol.ProcessOutput{}, protocol.Errorf(protocol.CodeInvalid,
			"offset %d is outside the output (%d bytes so far); pass 0 or the next_offset of the last read", req.Offset, total)
	}
	stdout, stderr, from, total := b.log.read(req.Offset, n)
	next := from + int64(len(stdout)+len(stderr))
	return protocol.ProcessOutput{
		Process:    b.info(),
		Stdout:     stdout,
		Stderr:     stderr,
		Offset:     from,
		NextOffset: next,
		Dropped:    from - req.Offset,
		More:       next < total,
	}, nil
}
