package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/sandgate/sandgate/gateway/mcpapi"

	"github.com/sandgate/sandgate/gateway/fleet"
)

type sandboxNetworkArgs struct {
	sandboxRefArgs
	Allow *[]string `json:"allow,omitempty" jsonschema:"The new allowlist, replacing the old one: host (example.com), *.suffix, CIDR or IP, each with an optional :port, :lo-hi or :*. [] removes all network access. Omit it to only show the current list."`
}

// networkInfo is the network part of sandbox_info and sandbox_network.
type networkInfo struct {
	Allow   []string `json:"allow"`   // the sandbox's allowlist; empty: no network
	Ceiling []string `json:"ceiling"` // the most the operator allows this tenant
	// Proxy is where the sandbox's programs find the egress proxy.
	Proxy             string `json:"proxy"`
	MaxConnections    int    `json:"max_connections"`
	BytesPerMinute    int64  `json:"bytes_per_minute"`
	IdleTimeoutS      int64  `json:"idle_timeout_s"`
	ActiveConnections int    `json:"active_connections"`
}

// sandboxProxy is the proxy address inside every sandbox (the runner's
// default --proxy-listen).
const sandboxProxy = "http://127.0.0.1:3128"

func (g *Toolbox) networkInfo(b *fleet.Box) networkInfo {
	l := g.cfg.EgressLimits
	n := networkInfo{Allow: nonNil(b.Gate.Allow().Strings()), Ceiling: nonNil(g.cfg.EgressPolicy.For(b.Tenant).Ceiling.Strings()),
		Proxy: sandboxProxy, MaxConnections: l.MaxConns, BytesPerMinute: l.BytesPerMinute, IdleTimeoutS: int64(l.IdleTimeout.Seconds())}
	if b.Gate != nil {
		n.ActiveConnections = b.Gate.Active()
	}
	return n
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func runSandboxNetwork(ctx context.Context, c *call) (*mcpapi.CallToolResult, error) {
	a, err := bind[sandboxNetworkArgs](c)
	if err != nil {
		return nil, err
	}
	b := c.box
	verb, warning := "allows", ""
	switch {
	case a.Allow != nil:
		rules, err := c.g.boxes.CheckAllow(b.Tenant, *a.Allow)
		if err != nil {
			return nil, err
		}
		if warning, err = c.g.boxes.SetAllow(ctx, b, rules); err != nil {
			return nil, err
		}
		verb = "now allows"
	default:
		// Another replica may have changed it since this one last looked.
		if err := c.g.boxes.RefreshNetwork(ctx, b); err != nil {
			return nil, err
		}
	}
	info := c.g.networkInfo(b)
	text := fmt.Sprintf("sandbox %s %s no network access", b.ID(), verb)
	if len(info.Allow) > 0 {
		text = fmt.Sprintf("sandbox %s %s: %s (through the proxy at %s)", b.ID(), verb, strings.Join(info.Allow, ", "), info.Proxy)
	}
	if warning != "" {
		text += "; " + warning
	}
	return structured(info, text, false), nil
}

// summarizeNetwork records the requested list (destinations, no secrets).
func summarizeNetwork(args map[string]any) map[string]string {
	s := summarize("sandbox_id")(args)
	if allow, ok := args["allow"].([]any); ok {
		parts := make([]string, 0, len(allow))
		for _, v := range allow {
			parts = append(parts, fmt.Sprint(v))
		}
		if s == nil {
			s = map[string]string{}
		}
		s["allow"] = strings.Join(parts, ",")
	}
	return s
}
