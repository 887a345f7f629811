package resource

import "time"

// SetKeyMaxAge lets tests age a key set without waiting minutes.
func SetKeyMaxAge(v *JWTVerifier, d time.Duration) {
	v.keys.mu.Lock()
	defer v.keys.mu.Unlock()
	v.keys.maxAge = d
}
