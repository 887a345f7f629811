package proxy

import (
	"bufio"
	"io"
	"net"
	"sync"
)

var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// Relay copies client → tunnel (starting with what br already holds)
// and tunnel → client until both directions end or one fails. A
// direction that ends cleanly half-closes the other side's writes.
func Relay(client net.Conn, br *bufio.Reader, tunnel net.Conn) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		if !copyHalf(tunnel, io.MultiReader(io.LimitReader(br, int64(br.Buffered())), client)) {
			client.Close()
			tunnel.Close()
		}
	}()
	go func() {
		defer wg.Done()
		if !copyHalf(client, tunnel) {
			client.Close()
			tunnel.Close()
		}
	}()
	wg.Wait()
}

// copyHalf copies src to dst and, at a clean end, half-closes dst (or
// closes it, when it cannot half-close). It reports whether the copy
// ended cleanly.
func copyHalf(dst net.Conn, src io.Reader) bool {
	buf := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(buf)
	if _, err := io.CopyBuffer(dst, src, *buf); err != nil {
		return false
	}
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return true
	}
	return false
}
