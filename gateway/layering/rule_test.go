package layering_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/gateway/layering"
)

const m = layering.Module

// sound is a small module graph that keeps every rule: the runner with
// its cgroup library, sandbox with a Docker client, and the gateway on
// top, mcp-go behind its MCP edge.
func sound() layering.Graph {
	return layering.Graph{
		m + "/cmd/runner":                    {m + "/runner"},
		m + "/runner":                        {m + "/runner/cgroup", m + "/runner/protocol"},
		m + "/runner/cgroup":                 {"github.com/containerd/cgroups/v3"},
		"github.com/containerd/cgroups/v3":   {"github.com/moby/sys/userns"},
		"github.com/moby/sys/userns":         nil,
		m + "/runner/protocol":               nil,
		m + "/sandbox":                       {m + "/runner/protocol"},
		m + "/sandbox/docker":                {m + "/sandbox", "github.com/docker/docker/client"},
		"github.com/docker/docker/client":    nil,
		m + "/auth":                          nil,
		m + "/gateway":                       {m + "/sandbox", m + "/auth", m + "/gateway/mcpapi", m + "/gateway/mcpedge"},
		m + "/gateway/mcpapi":                nil,
		m + "/gateway/audit":                 nil,
		"github.com/mark3labs/mcp-go/server": {"github.com/mark3labs/mcp-go/mcp"},
		"github.com/mark3labs/mcp-go/mcp":    nil,
		m + "/gateway/fleet":                 {m + "/sandbox", m + "/gateway/audit"},
		m + "/gateway/mcpedge":               {m + "/gateway/audit", m + "/gateway/mcpapi", "github.com/mark3labs/mcp-go/server"},
		m + "/gateway/e2bbackend":            {m + "/gateway/fleet", m + "/gateway/audit"},
		m + "/gateway/tools":                 {m + "/gateway/fleet", m + "/gateway/mcpapi"},
		m + "/gateway/resources":             {m + "/gateway/tools", m + "/gateway/mcpapi"},
		m + "/cmd/gateway":                   {m + "/gateway", m + "/gateway/mcpedge", m + "/gateway/e2bbackend", m + "/gateway/tools"},
	}
}

func check(g layering.Graph) []string {
	var out []string
	for _, r := range layering.Rules {
		for _, v := range r.Check(g) {
			out = append(out, v.String())
		}
	}
	return out
}

func TestSoundGraphKeepsEveryRule(t *testing.T) {
	t.Parallel()
	if got := check(sound()); len(got) > 0 {
		t.Errorf("violations in the sound graph: %q", got)
	}
}

// TestRulesCanFail breaks each rule of layering.Rules in a copy of the
// sound graph and checks the message names the chain.
func TestRulesCanFail(t *testing.T) {
	t.Parallel()
	const (
		onTop      = "the gateway sits on top: nothing below it imports it: "
		standAlone = "the runner stands alone: it imports none of the gateway's libraries: "
		noClient   = "the runner links no Docker or Kubernetes client: "
		mcpEdge    = "mcp-go is known only to the MCP edge: "
		mcpAPI     = "the MCP surface's types are data: they import no gateway package and not mcp-go: "
		fleet      = "the fleet keeps sandboxes and speaks no protocol: "
		edge       = "the MCP edge runs no tool and touches no sandbox: "
		e2b        = "the E2B adapter knows nothing of MCP: "
		toolsRule  = "the tools, resources and prompts build the MCP surface's types and know neither the MCP edge nor mcp-go: "
	)
	tests := []struct {
		name string
		add  map[string][]string // edges added to the sound graph
		want []string
	}{
		{
			name: "auth reaches the gateway through a library",
			add:  map[string][]string{m + "/auth": {"example.com/lib"}, "example.com/lib": {m + "/gateway/audit"}},
			want: []string{onTop + m + "/auth -> example.com/lib -> " + m + "/gateway/audit"},
		},
		{
			name: "the runner imports the gateway",
			add:  map[string][]string{m + "/runner/protocol": {m + "/gateway/audit"}},
			want: []string{onTop + m + "/runner/protocol -> " + m + "/gateway/audit"},
		},
		{
			name: "the runner imports sandbox",
			add:  map[string][]string{m + "/runner": {m + "/sandbox/workspace"}, m + "/sandbox/workspace": nil},
			want: []string{standAlone + m + "/runner -> " + m + "/sandbox/workspace"},
		},
		{
			name: "the runner imports the Docker client",
			add:  map[string][]string{m + "/runner/cgroup": {"github.com/docker/docker/client"}},
			want: []string{noClient + m + "/runner/cgroup -> github.com/docker/docker/client"},
		},
		{
			name: "the cgroup library brings a Kubernetes client",
			add:  map[string][]string{"github.com/containerd/cgroups/v3": {"k8s.io/client-go/kubernetes"}, "k8s.io/client-go/kubernetes": nil},
			want: []string{noClient + m + "/runner/cgroup -> github.com/containerd/cgroups/v3 -> k8s.io/client-go/kubernetes"},
		},
		{
			name: "sandbox imports mcp-go",
			add:  map[string][]string{m + "/sandbox/docker": {"github.com/mark3labs/mcp-go/mcp"}},
			want: []string{mcpEdge + m + "/sandbox/docker -> github.com/mark3labs/mcp-go/mcp"},
		},
		{
			name: "the gateway's wiring imports mcp-go",
			add:  map[string][]string{m + "/gateway": {"github.com/mark3labs/mcp-go/server"}},
			want: []string{mcpEdge + m + "/gateway -> github.com/mark3labs/mcp-go/server"},
		},
		{
			name: "a command imports mcp-go",
			add:  map[string][]string{m + "/cmd/gateway": {"github.com/mark3labs/mcp-go/mcp"}},
			want: []string{mcpEdge + m + "/cmd/gateway -> github.com/mark3labs/mcp-go/mcp"},
		},
		{
			name: "the MCP types import mcp-go",
			add:  map[string][]string{m + "/gateway/mcpapi": {"github.com/mark3labs/mcp-go/mcp"}},
			want: []string{mcpEdge + m + "/gateway/mcpapi -> github.com/mark3labs/mcp-go/mcp",
				mcpAPI + m + "/gateway/mcpapi -> github.com/mark3labs/mcp-go/mcp",
				toolsRule + m + "/gateway/resources -> " + m + "/gateway/mcpapi -> github.com/mark3labs/mcp-go/mcp"},
		},
		{
			name: "the MCP types import the audit log",
			add:  map[string][]string{m + "/gateway/mcpapi": {m + "/gateway/audit"}},
			want: []string{mcpAPI + m + "/gateway/mcpapi -> " + m + "/gateway/audit"},
		},
		{
			name: "a tool reaches into the MCP edge",
			add:  map[string][]string{m + "/gateway/tools": {m + "/gateway/mcpedge"}},
			want: []string{toolsRule + m + "/gateway/tools -> " + m + "/gateway/mcpedge"},
		},
		{
			name: "a prompt reaches into the gateway's wiring",
			add:  map[string][]string{m + "/gateway/resources": {m + "/gateway"}},
			want: []string{toolsRule + m + "/gateway/resources -> " + m + "/gateway"},
		},
		{
			name: "the fleet imports the MCP edge",
			add:  map[string][]string{m + "/gateway/fleet": {m + "/gateway/mcpedge"}},
			want: []string{fleet + m + "/gateway/fleet -> " + m + "/gateway/mcpedge",
				toolsRule + m + "/gateway/tools -> " + m + "/gateway/fleet -> " + m + "/gateway/mcpedge",
				e2b + m + "/gateway/e2bbackend -> " + m + "/gateway/fleet -> " + m + "/gateway/mcpedge"},
		},
		{
			name: "the MCP edge reaches a sandbox",
			add:  map[string][]string{m + "/gateway/mcpedge": {m + "/gateway/fleet"}},
			want: []string{edge + m + "/gateway/mcpedge -> " + m + "/gateway/fleet"},
		},
		{
			name: "the E2B adapter imports the gateway's tools",
			add:  map[string][]string{m + "/gateway/e2bbackend": {m + "/gateway"}},
			want: []string{e2b + m + "/gateway/e2bbackend -> " + m + "/gateway"},
		},
		{
			name: "a third-party package imports mcp-go",
			add:  map[string][]string{m + "/gateway": {"example.com/mcpwrap"}, "example.com/mcpwrap": {"github.com/mark3labs/mcp-go/mcp"}},
			want: []string{mcpEdge + "example.com/mcpwrap -> github.com/mark3labs/mcp-go/mcp"},
		},
	}
	broken := map[string]bool{}
	for _, tt := range tests {
		g := sound()
		for p, imps := range tt.add {
			g[p] = append(g[p], imps...)
		}
		got := check(g)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
		for _, v := range got {
			for _, prefix := range []string{onTop, standAlone, noClient, mcpEdge, mcpAPI, fleet, edge, e2b, toolsRule} {
				if strings.HasPrefix(v, prefix) {
					broken[prefix] = true
				}
			}
		}
	}
	// Every rule reports itself stale on an empty graph, which gives its
	// name: each must be broken by a case above.
	for _, r := range layering.Rules {
		vs := r.Check(layering.Graph{})
		if len(vs) != 1 || vs[0].Stale == "" {
			t.Errorf("rule %+v on an empty graph: %v, want it reported stale", r, vs)
			continue
		}
		if !broken[vs[0].Rule+": "] {
			t.Errorf("no case in TestRulesCanFail breaks %q; add one", vs[0].Rule)
		}
	}
}

// TestStaleRule checks that a rule naming no package says so.
func TestStaleRule(t *testing.T) {
	t.Parallel()
	g := sound()
	for p := range g {
		if (layering.Patterns{m + "/runner/...", m + "/cmd/runner"}).Match(p) {
			delete(g, p)
		}
	}
	r := layering.NoDeps{Why: "w", From: layering.Patterns{m + "/runner/..."}, To: layering.Patterns{m + "/gateway/..."}}
	got := r.Check(g)
	want := "w: no package matches [" + m + "/runner/...]"
	if len(got) != 1 || got[0].String() != want {
		t.Errorf("Check = %v, want [%s]", got, want)
	}
}
