package browser

import "github.com/sandgate/sandgate/runner/protocol"

// RouteMatches compiles r and reports whether it matches url.
func RouteMatches(r protocol.Route, url string) (bool, error) {
	c, err := compileRoute(r)
	if err != nil {
		return false, err
	}
	return c.re.MatchString(url), nil
}
