package files

// Hooks for the black-box tests in package files_test: path resolution and
// error mapping have no exported entry point of their own.

// ResolvePath resolves p as every operation does.
func ResolvePath(s *Service, p string) (string, error) { return s.resolve("test", p) }

// MapError maps err as every operation does, for operation "op" on "/p".
func MapError(s *Service, err error) error { return s.fsError("op", "/p", err) }
