package apikey

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
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
