package e2b

import (
	"errors"
	"net/http"
	"slices"
)

// allTraffic is what the SDKs send for "everything" (ALL_TRAFFIC).
const allTraffic = "0.0.0.0/0"

// networkBody is E2B's egress configuration. Sandgate's egress is an
// allowlist under the operator's per-tenant ceiling, and everything else
// is denied: allowOut maps onto the allowlist; a denyOut other than
// "everything else" cannot be expressed and is refused, as are proxies,
// per-host rules and public inbound traffic.
type networkBody struct {
	AllowOut            []string `json:"allowOut"`
	DenyOut             []string `json:"denyOut"`
	AllowPublicTraffic  *bool    `json:"allowPublicTraffic"`
	EgressProxy         any      `json:"egressProxy"`
	Rules               any      `json:"rules"`
	MaskRequestHost     any      `json:"maskRequestHost"`
	HTTPSPorts          any      `json:"httpsPorts"`
	AllowInternetAccess *bool    `json:"allow_internet_access"`
}

// egressAllow turns E2B's network settings into an allowlist; nil means
// the tenant's default.
func egressAllow(internet *bool, n *networkBody) ([]string, error) {
	if n == nil {
		if internet != nil && !*internet {
			return []string{}, nil
		}
		return nil, nil
	}
	switch {
	case !isOff(n.EgressProxy):
		return nil, errors.New("network.egressProxy is not supported: sandboxes reach the network only through Sandgate's own egress proxy")
	case !isOff(n.Rules), !isOff(n.MaskRequestHost), !isOff(n.HTTPSPorts):
		return nil, errors.New("network.rules, maskRequestHost and httpsPorts are not supported: give destinations in network.allowOut")
	case n.AllowPublicTraffic != nil && *n.AllowPublicTraffic:
		return nil, errors.New("network.allowPublicTraffic is not supported: sandboxes accept no inbound connections")
	case len(n.DenyOut) > 0 && !slices.Equal(n.DenyOut, []string{allTraffic}):
		return nil, errors.New("network.denyOut is not supported except for " + allTraffic + ": Sandgate denies everything not in allowOut")
	}
	if n.AllowOut != nil {
		return n.AllowOut, nil
	}
	if (internet != nil && !*internet) || len(n.DenyOut) > 0 {
		return []string{}, nil
	}
	return nil, nil
}

// isOff reports whether a decoded JSON value configures nothing: absent,
// null, false, "", or an empty object or list (the Python SDK sends
// rules {} for no rules).
func isOff(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case bool:
		return !v
	case string:
		return v == ""
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	}
	return false
}

// setNetwork is PUT /sandboxes/{id}/network: it replaces the allowlist
// (omitted fields clear it, as E2B's does).
func (a *API) setNetwork(w http.ResponseWriter, r *http.Request) {
	var body networkBody
	if !decodeBody(w, r, &body) {
		return
	}
	allow, err := egressAllow(body.AllowInternetAccess, &body)
	if err != nil {
		replyErrorStatus(w, http.StatusBadRequest, err.Error())
		return
	}
	if allow == nil {
		allow = []string{}
	}
	if _, err := a.backend.SetNetwork(r.Context(), r.PathValue("id"), allow); err != nil {
		a.fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
