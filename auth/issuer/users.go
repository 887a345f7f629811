package issuer

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/sandgate/sandgate/auth"
)

const usersFile = "users.json"

// bcryptCost is the work factor of password and client secret hashes.
// Tests lower it; production keeps bcrypt's default.
var bcryptCost = bcrypt.DefaultCost

// devUsername is the account EnsureDevUser creates on first start.
const devUsername = "dev"

// usersDoc is users.json.
type usersDoc struct {
	Users map[string]userRecord `json:"users"`
}

// userRecord is one person who can sign in at /login. The username is
// the token subject; Tenant becomes the "tenant" claim.
type userRecord struct {
	PasswordHash string    `json:"password_hash"`
	Tenant       string    `json:"tenant"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

// AddUser creates or updates a user in dir with a bcrypt hash of
// password. An empty tenant means the user is its own tenant. Updating an
// existing user replaces its password and tenant.
func AddUser(dir, username, password, tenant string) error {
	if tenant == "" {
		tenant = username
	}
	if err := checkName("user name", username); err != nil {
		return err
	}
	if err := checkName("tenant", tenant); err != nil {
		return err
	}
	if len(password) < 8 || len(password) > 72 {
		return errors.New("add user: the password must be 8 to 72 bytes long")
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcryptCost)
	if err != nil {
		return fmt.Errorf("add user %s: hash password: %w", username, err)
	}
	if err := ensureDir(dir); err != nil {
		return err
	}
	f := newJSONFile[usersDoc](dir, usersFile)
	return f.Update(func(d *usersDoc) error {
		now := time.Now().UTC()
		if d.Users == nil {
			d.Users = map[string]userRecord{}
		}
		rec, ok := d.Users[username]
		if !ok {
			rec.CreatedAt = now
		}
		rec.PasswordHash, rec.Tenant, rec.UpdatedAt = string(hash), tenant, now
		d.Users[username] = rec
		return nil
	})
}

// EnsureDevUser creates the user "dev" with a random password when dir
// has no users at all, so a first `make run` can sign in. The password is
// returned only then, for printing once; later calls return created false.
func EnsureDevUser(dir string) (username, password string, created bool, err error) {
	if err := ensureDir(dir); err != nil {
		return "", "", false, err
	}
	f := newJSONFile[usersDoc](dir, usersFile)
	if d, err := f.Load(); err != nil {
		return "", "", false, fmt.Errorf("create dev user: %w", err)
	} else if len(d.Users) > 0 {
		return devUsername, "", false, nil // the common case: skip hashing
	}
	password = randomToken(16)
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcryptCost)
	if err != nil {
		return "", "", false, fmt.Errorf("create dev user: hash password: %w", err)
	}
	err = f.Update(func(d *usersDoc) error {
		// Only on a first start: an operator who removed or renamed users
		// must not find a dev account reappear.
		if len(d.Users) > 0 {
			return nil
		}
		now := time.Now().UTC()
		d.Users = map[string]userRecord{devUsername: {
			PasswordHash: string(hash), Tenant: devUsername, CreatedAt: now, UpdatedAt: now,
		}}
		created = true
		return nil
	})
	if err != nil {
		return "", "", false, fmt.Errorf("create dev user: %w", err)
	}
	if !created {
		return devUsername, "", false, nil
	}
	return devUsername, password, true, nil
}

// checkName applies the names policy that auth.CheckName decides.
func checkName(what, s string) error { return auth.CheckName(what, s) }

// dummyHash is compared against when a user does not exist, so a wrong
// user name costs as much time as a wrong password and reveals nothing.
var dummyHash = sync.OnceValue(func() []byte {
	h, _ := bcrypt.GenerateFromPassword([]byte("no such user"), bcryptCost)
	return h
})

// checkPassword returns the user when password is right.
func (s *storage) checkPassword(username, password string) (userRecord, bool, error) {
	d, err := s.users.Load()
	if err != nil {
		return userRecord{}, false, err
	}
	rec, ok := d.Users[username]
	hash := []byte(rec.PasswordHash)
	if !ok {
		hash = dummyHash()
	}
	if bcrypt.CompareHashAndPassword(hash, []byte(password)) != nil || !ok {
		return userRecord{}, false, nil
	}
	return rec, true, nil
}

// user returns a user by name.
func (s *storage) user(username string) (userRecord, bool, error) {
	d, err := s.users.Load()
	if err != nil {
		return userRecord{}, false, err
	}
	rec, ok := d.Users[username]
	return rec, ok, nil
}
