package apikey

import (
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/auth/jsonstate"
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
// and several processes may use the same file (see the package comment
// and package jsonstate, which keeps the file).
type Store struct {
	file *jsonstate.File[document]

	mu   sync.Mutex // guards doc and snap
	doc  *document  // the version snap indexes
	snap *snapshot
}

// Open returns the store kept in the file at path. The file need not
// exist: the store is then empty, and Add creates the file and its
// directory (0700). A file that exists but cannot be decoded is an error.
func Open(path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("open API key store: the path is empty")
	}
	s := &Store{file: jsonstate.New[document](path)}
	if _, err := s.load(); err != nil {
		return nil, fmt.Errorf("open API key store: %w", err)
	}
	return s, nil
}

// Path returns the file the store is kept in.
func (s *Store) Path() string { return s.file.Path() }

// load returns the current snapshot, indexing the document again only
// when the file changed since the last call (jsonstate hands back the
// same document until then). The caller must not modify the result.
func (s *Store) load() (*snapshot, error) {
	doc, err := s.file.Load()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if doc == s.doc {
		return s.snap, nil
	}
	snap, err := doc.index(s.Path())
	if err != nil {
		return nil, err
	}
	s.doc, s.snap = doc, snap
	return snap, nil
}

// update applies change to the document read afresh under the writers'
// lock and saves the result, so a writer in another process never loses
// this one's change nor this one its. If change fails, or leaves a
// document that does not index, nothing is written.
func (s *Store) update(change func(d *document) error) error {
	return s.file.Update(func(d *document) error {
		if err := change(d); err != nil {
			return err
		}
		_, err := d.index(s.Path())
		return err
	})
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

// Revoked returns the records of the revoked keys, oldest first.
func (s *Store) Revoked() ([]Record, error) {
	snap, err := s.load()
	if err != nil {
		return nil, fmt.Errorf("list revoked API keys: %w", err)
	}
	var out []Record
	for _, e := range snap.entries {
		if e.Revoked() {
			out = append(out, e.Record.clone())
		}
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
