package issuer

import "time"

// SetBcryptCost lets the black-box tests hash at bcrypt.MinCost: under
// the race detector the default cost takes most of a second per hash.
func SetBcryptCost(cost int) { bcryptCost = cost }

// SetDeviceClock replaces the clock of s's device authorizations, so
// tests can expire a device code or poll "too fast" without sleeping.
func SetDeviceClock(s *Server, now func() time.Time) {
	s.st.devices.mu.Lock()
	defer s.st.devices.mu.Unlock()
	s.st.devices.now = now
}
