package issuer

// SetBcryptCost lets the black-box tests hash at bcrypt.MinCost: under
// the race detector the default cost takes most of a second per hash.
func SetBcryptCost(cost int) { bcryptCost = cost }
