// Package jsonstate keeps small JSON documents (the authorization
// server's clients, keys and users; the gateway's API keys) in files that
// several processes share: a running server reads them on every use and
// notices changes, operator commands change them, and no writer loses
// another's change.
package jsonstate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// File is one JSON document that a running server and operator
// commands (gateway client add, apikey add ...) may use from different
// processes at the same time.
//
// Writers serialise on an flock of path+".lock", re-read the document under
// that lock, change it and replace the file by an atomic rename, so no
// writer loses another's change and no reader ever sees half a file.
// Readers take no lock: they stat the file on every load and decode it
// again when its identity (inode, size, mtime) changed. That is how a
// running server sees a rotated key or a new client on its next request.
type File[T any] struct {
	path string

	mu    sync.Mutex
	doc   *T // the last decoded version; never modified once cached
	stamp fileStamp
}

// fileStamp identifies one version of a file. A rename gives a new inode;
// size and nanosecond mtime guard against inode reuse.
type fileStamp struct {
	exists bool
	ino    uint64
	size   int64
	mod    int64 // UnixNano
}

// New returns the document kept at path; the file need not exist yet.
func New[T any](path string) *File[T] {
	return &File[T]{path: filepath.Clean(path)}
}

// Path is the file the document is kept in.
func (f *File[T]) Path() string { return f.path }

// Load returns the current document; a missing file yields a zero
// document. The caller must treat the result as read-only.
func (f *File[T]) Load() (*T, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, err := statPath(f.path)
	if err != nil {
		return nil, err
	}
	if f.doc != nil && st == f.stamp {
		return f.doc, nil
	}
	doc, st, err := f.read()
	if err != nil {
		return nil, err
	}
	f.doc, f.stamp = doc, st
	return doc, nil
}

// Update applies change to a freshly read copy of the document under the
// writers' lock and saves the result. If change fails, nothing is written.
func (f *File[T]) Update(change func(doc *T) error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
		return fmt.Errorf("create directory for %s: %w", f.path, err)
	}
	unlock, err := lockPath(f.path + ".lock")
	if err != nil {
		return err
	}
	defer unlock()
	doc, _, err := f.read()
	if err != nil {
		return err
	}
	if err := change(doc); err != nil {
		return err
	}
	st, err := writeFileAtomic(f.path, doc)
	if err != nil {
		return err
	}
	// Cache what we wrote, under the stamp of exactly those bytes (a
	// rename keeps inode and mtime), so the next load needs no decode and
	// a later write by another process is still noticed.
	f.doc, f.stamp = doc, st
	return nil
}

// read decodes the file into a new document. The stamp comes from the
// open descriptor, so it describes exactly the bytes decoded.
func (f *File[T]) read() (*T, fileStamp, error) {
	doc := new(T)
	file, err := os.Open(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return doc, fileStamp{}, nil
	}
	if err != nil {
		return nil, fileStamp{}, fmt.Errorf("open %s: %w", f.path, err)
	}
	defer file.Close()
	info, err := file.Stat()
	if err != nil {
		return nil, fileStamp{}, fmt.Errorf("stat %s: %w", f.path, err)
	}
	if err := json.NewDecoder(file).Decode(doc); err != nil {
		return nil, fileStamp{}, fmt.Errorf("decode %s: %w", f.path, err)
	}
	return doc, stampOf(info), nil
}

func statPath(path string) (fileStamp, error) {
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fileStamp{}, nil
	}
	if err != nil {
		return fileStamp{}, fmt.Errorf("stat %s: %w", path, err)
	}
	return stampOf(info), nil
}

func stampOf(info fs.FileInfo) fileStamp {
	st := fileStamp{exists: true, size: info.Size(), mod: info.ModTime().UnixNano()}
	if sys, ok := info.Sys().(*syscall.Stat_t); ok {
		st.ino = uint64(sys.Ino)
	}
	return st
}

// lockPath takes an exclusive flock on path, creating it 0600. The lock
// is released by the returned function or when the process dies, so a
// crashed writer never wedges the directory.
func lockPath(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() {
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	}, nil
}

// writeFileAtomic writes v as JSON to a 0600 temporary file next to path,
// syncs it and renames it over path. It returns the stamp of the new file.
func writeFileAtomic(path string, v any) (_ fileStamp, retErr error) {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fileStamp{}, fmt.Errorf("encode %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fileStamp{}, fmt.Errorf("create temporary file for %s: %w", path, err)
	}
	defer func() {
		if retErr != nil {
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return fileStamp{}, fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fileStamp{}, fmt.Errorf("sync %s: %w", tmp.Name(), err)
	}
	info, err := tmp.Stat()
	if err != nil {
		tmp.Close()
		return fileStamp{}, fmt.Errorf("stat %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fileStamp{}, fmt.Errorf("close %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fileStamp{}, fmt.Errorf("replace %s: %w", path, err)
	}
	// Sync the directory so the rename survives a power cut.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return stampOf(info), nil
}
