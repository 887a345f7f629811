package interp

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// maxReplyBytes bounds one reply line from the driver: figures (8 MiB of
// PNG, a third more in base64), a 64 KiB result and a 64 KiB traceback,
// with room to spare. A longer line means the driver is not the one
// writing, and the interpreter is replaced.
const maxReplyBytes = 16 << 20

// request is one cell for the driver (fd 3).
type request struct {
	Cell  int    `json:"cell"`
	Code  string `json:"code"`
	Fence string `json:"fence"`
}

// reply is the driver's answer to a request (fd 4); the first line the
// driver writes is a reply with Ready set instead.
type reply struct {
	Ready          bool     `json:"ready"`
	Python         string   `json:"python"`
	Cell           int      `json:"cell"`
	Result         string   `json:"result"`
	HasResult      bool     `json:"has_result"`
	ResultCut      bool     `json:"result_cut"`
	Error          string   `json:"error"`
	ErrorName      string   `json:"error_name"`
	Figures        [][]byte `json:"figures"`
	FiguresOmitted int      `json:"figures_omitted"`
	Fenced         bool     `json:"fenced"`
}

var errReplyTooLong = errors.New("reply line too long")

// readReplies sends every line of r to out until r fails, a line exceeds
// maxReplyBytes or stop is closed, then closes out.
func readReplies(r io.Reader, out chan<- []byte, stop <-chan struct{}) error {
	defer close(out)
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxReplyBytes {
			return errReplyTooLong
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			return err
		}
		select {
		case out <- line:
		case <-stop:
			return nil
		}
		line = nil
	}
}

// send writes one request line to the driver, giving up at deadline: a
// driver that is not reading its requests is not waiting for a cell.
func send(w *os.File, req request, deadline time.Time) error {
	b, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("encode request: %w", err)
	}
	if err := w.SetWriteDeadline(deadline); err != nil {
		return fmt.Errorf("set write deadline: %w", err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("send cell to the interpreter: %w", err)
	}
	return nil
}
