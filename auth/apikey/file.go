package apikey

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// document is the file's content.
type document struct {
	Keys []entry `json:"keys"`
}

// entry is one key as stored: its record and the hex SHA-256 of the key.
type entry struct {
	Record
	SHA256 string `json:"sha256"`
}

// snapshot is one decoded version of the file. It is never modified once
// built: Lookup reads it without a lock.
type snapshot struct {
	entries []entry
	hashes  [][sha256.Size]byte // hashes[i] is entries[i].SHA256, decoded
}

// index decodes the hashes of d's entries, so Lookup compares bytes.
func (d document) index(path string) (*snapshot, error) {
	snap := &snapshot{entries: d.Keys, hashes: make([][sha256.Size]byte, len(d.Keys))}
	for i, e := range d.Keys {
		b, err := hex.DecodeString(e.SHA256)
		if err != nil || len(b) != sha256.Size {
			return nil, fmt.Errorf("decode %s: key %q has no valid sha256; restore the file or revoke and re-add the key", path, e.ID)
		}
		copy(snap.hashes[i][:], b)
	}
	return snap, nil
}

// fileStamp identifies one version of a file. A rename gives a new inode;
// size and nanosecond mtime guard against inode reuse.
type fileStamp struct {
	exists bool
	ino    uint64
	size   int64
	mod    int64 // UnixNano
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

// readFile decodes path; a missing file is an empty document. The stamp
// comes from the open descriptor, so it describes exactly the bytes
// decoded even if a writer renames a new version in meanwhile.
func readFile(path string) (document, fileStamp, error) {
	var doc document
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return doc, fileStamp{}, nil
	}
	if err != nil {
		return doc, fileStamp{}, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return doc, fileStamp{}, fmt.Errorf("stat %s: %w", path, err)
	}
	if err := json.NewDecoder(f).Decode(&doc); err != nil {
		return doc, fileStamp{}, fmt.Errorf("decode %s: %w", path, err)
	}
	return doc, stampOf(info), nil
}

// lockPath takes an exclusive flock on path, creating it 0600. The lock
// is released by the returned function or when the process dies, so a
// crashed CLI never wedges the store.
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

// writeFileAtomic writes doc to a 0600 temporary file next to path, syncs
// it and renames it over path, so no reader ever sees half a file. It
// returns the stamp of the new file (a rename keeps inode and mtime).
func writeFileAtomic(path string, doc document) (_ fileStamp, retErr error) {
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fileStamp{}, fmt.Errorf("encode %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*") // CreateTemp makes it 0600
	if err != nil {
		return fileStamp{}, fmt.Errorf("create temporary file for %s: %w", path, err)
	}
	defer func() {
		if retErr != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		return fileStamp{}, fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		return fileStamp{}, fmt.Errorf("sync %s: %w", tmp.Name(), err)
	}
	info, err := tmp.Stat()
	if err != nil {
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
