package files

import (
	"io/fs"

	"github.com/sandgate/sandgate/runner/protocol"
)

// Unix special permission bits, as they travel on the wire.
const (
	unixSetuid = 0o4000
	unixSetgid = 0o2000
	unixSticky = 0o1000
)

// unixPerm returns the permission bits of m as Unix spells them, special
// bits included, e.g. 0o644 or 0o4755. Go keeps the special bits outside
// fs.ModePerm, so m.Perm() alone would lose them.
func unixPerm(m fs.FileMode) uint32 {
	u := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		u |= unixSetuid
	}
	if m&fs.ModeSetgid != 0 {
		u |= unixSetgid
	}
	if m&fs.ModeSticky != 0 {
		u |= unixSticky
	}
	return u
}

// permMode is the inverse of unixPerm, for os.Chmod and friends.
func permMode(u uint32) fs.FileMode {
	m := fs.FileMode(u) & fs.ModePerm
	if u&unixSetuid != 0 {
		m |= fs.ModeSetuid
	}
	if u&unixSetgid != 0 {
		m |= fs.ModeSetgid
	}
	if u&unixSticky != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// parseMode checks a requested mode: 0 means "use def", anything else must
// fit in the twelve Unix permission bits. JSON carries the number in
// decimal, so the hint shows both spellings.
func parseMode(op, p string, mode uint32, def fs.FileMode) (fs.FileMode, error) {
	if mode == 0 {
		return def, nil
	}
	if mode > 0o7777 {
		return 0, protocol.Errorf(protocol.CodeInvalid,
			"%s %s: mode %d (0o%o) is not a permission mode; pass e.g. 420 for 0o644 or 493 for 0o755",
			op, p, mode, mode)
	}
	return permMode(mode), nil
}

// modeString renders m the way ls does, e.g. "-rw-r--r--", "drwxr-xr-x",
// "lrwxrwxrwx", "-rwsr-xr-x". fs.FileMode.String uses Go's own letters
// ("L" for links, "u" before the bits for setuid), which users do not
// expect.
func modeString(m fs.FileMode) string {
	b := []byte("----------")
	switch {
	case m.IsDir():
		b[0] = 'd'
	case m&fs.ModeSymlink != 0:
		b[0] = 'l'
	case m&fs.ModeNamedPipe != 0:
		b[0] = 'p'
	case m&fs.ModeSocket != 0:
		b[0] = 's'
	case m&fs.ModeCharDevice != 0: // before ModeDevice: char devices carry both
		b[0] = 'c'
	case m&fs.ModeDevice != 0:
		b[0] = 'b'
	}
	const rwx = "rwxrwxrwx"
	for i := range 9 {
		if m&(1<<uint(8-i)) != 0 {
			b[i+1] = rwx[i]
		}
	}
	special(b, 3, m&fs.ModeSetuid != 0, 's')
	special(b, 6, m&fs.ModeSetgid != 0, 's')
	special(b, 9, m&fs.ModeSticky != 0, 't')
	return string(b)
}

// special overlays a setuid, setgid or sticky bit on the execute letter at
// b[i]: lower case when execute is also set, upper case when not.
func special(b []byte, i int, set bool, letter byte) {
	if !set {
		return
	}
	if b[i] == 'x' {
		b[i] = letter
	} else {
		b[i] = letter - 'a' + 'A'
	}
}
