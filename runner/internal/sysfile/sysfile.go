// Package sysfile reads the small files the kernel generates (/proc,
// cgroup) with the fewest system calls.
//
// The runner reads several of them around every command it runs (process
// stat and environ for the tree sweep, the cgroup's OOM counter), and
// os.ReadFile spends seven or eight system calls on each: open, fcntl,
// an epoll registration that fails for such files, fstat for a size they
// do not report, two reads and close. ReadFile here spends four: open,
// read, the read that sees the end, close. On this kind of VM, where a
// system call costs microseconds, that was a measurable part of a short
// command's cost.
package sysfile

import (
	"io/fs"

	"golang.org/x/sys/unix"
)

// firstRead is the buffer of the first read: /proc/<pid>/stat and the
// cgroup files fit in it; an environment may not, and grows the buffer.
const firstRead = 1024

// ReadFile returns the whole content of the file at path. Errors are
// *fs.PathError, so errors.Is(err, fs.ErrNotExist) works as for
// os.ReadFile.
func ReadFile(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	for err == unix.EINTR {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	b := make([]byte, 0, firstRead)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return b, nil
		}
		b = b[:len(b)+n]
	}
}
