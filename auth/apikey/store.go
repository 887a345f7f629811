package apikey

import (
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sandgate/sandgate/auth"
)

// Error categories; Lookup's are a 401 at the gateway edge, any other
// error of Lookup is the store's fault.
var (
	// ErrMalformed: the key is not Prefix and 40 lowercase hex digits; the
	// wrapped message says what is wrong without quoting the key.
	ErrMalformed = errors.New("malformed API key")
	// ErrUnknown: no live key matches. A revoked key and one never issued
	// give the same error, so a caller learns nothing about which.
	ErrUnknown = errors.New("unknown or revoked API key")
	// ErrNotFound: no key has the ID given to Revoke.
	ErrNotFound = errors.New("no API key with this ID")
)

// idLen is the number of hex digits of a Record ID.
const idLen = 12

// Store is the API key file at one path. It is safe for concurrent use,
// and several processes may use the same file (see the package comment).
type Store struct {
	path string

	mu    sync.Mutex // guards snap and stamp
	snap  *snapshot  // the last decoded version of the file
	stamp fileStamp
}

// Open returns the store kept in the file at path. The file need not
// exist: the store is then empty, and Add creates the file and its
// directory (0700). A file that exists but cannot be decoded is an error.
func Open(path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("open API key store: the path is empty")
	}
	s := &Store{path: filepath.Clean(path)}
	if _, err := s.load(); err != nil {
		return nil, fmt.Errorf("open API key store: %w", err)
	}
	return s, nil
}

// Path returns the file the store is kept in.
func (s *Store) Path() string { return s.path }

// load returns the current snapshot, decoding the file again only when it
// changed since the last call. The caller must not modify the result.
func (s *Store) load() (*snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := statPath(s.path)
	if err != nil {
		return nil, err
	}
	if s.snap != nil && st == s.stamp {
		return s.snap, nil
	}
	doc, st, err := readFile(s.path)
	if err != nil {
		return nil, err
	}
	snap, err := doc.index(s.path)
	if err != nil {
		return nil, err
	}
	s.snap, s.stamp = snap, st
	return snap, nil
}

// update applies change to the document read afresh under the writers'
// flock and saves the result, so a writer in another process never loses
// this one's change nor this one its. If change fails nothing is written.
func (s *Store) update(change func(d *document) error) error {
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return fmt.Errorf("create directory for %s: %w", s.path, err)
	}
	unlock, err := lockPath(s.path + ".lock")
	if err != nil {
		return err
	}
	defer unlock()
	doc, _, err := readFile(s.path)
	if err != nil {
		return err
	}
	if err := change(&doc); err != nil {
		return err
	}
	snap, err := doc.index(s.path)
	if err != nil {
		return err
	}
	st, err := writeFileAtomic(s.path, doc)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.snap, s.stamp = snap, st
	s.mu.Unlock()
	return nil
}

// Add issues a key for tenant with scopes and returns it with its record.
// The key is returned only here: the store keeps its hash. Name is an
// optional label; scopes must be among auth.AllScopes.
func (s *Store) Add(name, tenant string, scopes []string) (key string, rec Record, err error) {
	if err := checkAdd(name, tenant, scopes); err != nil {
		return "", Record{}, fmt.Errorf("add API key: %w", err)
	}
	key = newKey()
	hash := hashKey(key)
	rec = Record{Name: name, Tenant: tenant, Scopes: dedupe(scopes), CreatedAt: time.Now().UTC()}
	err = s.update(func(d *document) error {
		rec.ID = newID(d.Keys)
		d.Keys = append(d.Keys, entry{Record: rec, SHA256: hex.EncodeToString(hash[:])})
		return nil
	})
	if err != nil {
		return "", Record{}, fmt.Errorf("add API key: %w", err)
	}
	return key, rec.clone(), nil
}

func checkAdd(name, tenant string, scopes []string) error {
	if tenant == "" {
		return errors.New("a tenant is required")
	}
	if err := auth.CheckName("tenant", tenant); err != nil {
		return err
	}
	if name != "" {
		if err := auth.CheckName("name", name); err != nil {
			return err
		}
	}
	if len(scopes) == 0 {
		return fmt.Errorf("give at least one scope (known: %s)", strings.Join(auth.AllScopes, ", "))
	}
	return auth.CheckScopes(scopes)
}

// newID returns an ID that no key in keys has.
func newID(keys []entry) string {
	for {
		id := hex.EncodeToString(randomBytes(idLen / 2))
		if !slices.ContainsFunc(keys, func(e entry) bool { return e.ID == id }) {
			return id
		}
	}
}

// List returns every key's record, revoked ones included, oldest first.
func (s *Store) List() ([]Record, error) {
	snap, err := s.load()
	if err != nil {
		return nil, fmt.Errorf("list API keys: %w", err)
	}
	out := make([]Record, len(snap.entries))
	for i, e := range snap.entries {
		out[i] = e.Record.clone()
	}
	return out, nil
}

// Revoke revokes the key with the given ID, or returns an error wrapping
// ErrNotFound. Revoking a revoked key succeeds and keeps the time of the
// first revocation, so a retried revoke is harmless. A running gateway
// refuses the key from its next Lookup.
func (s *Store) Revoke(id string) error {
	err := s.update(func(d *document) error {
		for i := range d.Keys {
			if d.Keys[i].ID == id {
				if !d.Keys[i].Revoked() {
					d.Keys[i].RevokedAt = time.Now().UTC()
				}
				return nil
			}
		}
		return ErrNotFound
	})
	if err != nil {
		return fmt.Errorf("revoke API key %q: %w", id, err)
	}
	return nil
}

// Lookup returns the record of the live key equal to key. It returns an
// error wrapping ErrMalformed when key does not look like a key, ErrUnknown
// when no live key matches, and another error when the file cannot be read
// (then it refuses every key rather than trust a stale copy).
func (s *Store) Lookup(key string) (Record, error) {
	if err := checkKey(key); err != nil {
		return Record{}, err
	}
	snap, err := s.load()
	if err != nil {
		return Record{}, fmt.Errorf("look up API key: %w", err)
	}
	hash := hashKey(key)
	// Compare against every hash, revoked ones included, in constant
	// time, so timing tells nothing about which keys exist or are live.
	found := -1
	for i := range snap.hashes {
		if subtle.ConstantTimeCompare(hash[:], snap.hashes[i][:]) == 1 {
			found = i
		}
	}
	if found < 0 || snap.entries[found].Revoked() {
		return Record{}, ErrUnknown
	}
	return snap.entries[found].Record.clone(), nil
}

// clone returns r with its own Scopes, so a caller cannot change a cached
// record.
func (r Record) clone() Record {
	r.Scopes = slices.Clone(r.Scopes)
	return r
}

// dedupe returns xs without repeats, in first-seen order.
func dedupe(xs []string) []string {
	var out []string
	for _, x := range xs {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}
