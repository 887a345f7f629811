package layering

// Module is the module path the rules are written against.
const Module = "github.com/sandgate/sandgate"

// Rules is the module's layering. A rule is one row; add one where a
// boundary is decided.
var Rules = []Rule{
	NoDeps{
		Why:  "the gateway sits on top: nothing below it imports it",
		From: Patterns{Module + "/runner/...", Module + "/cmd/runner", Module + "/sandbox/...", Module + "/auth/..."},
		To:   Patterns{Module + "/gateway/...", Module + "/cmd/gateway"},
	},
	NoDeps{
		Why:  "the runner stands alone: it imports none of the gateway's libraries",
		From: Patterns{Module + "/runner/...", Module + "/cmd/runner"},
		To:   Patterns{Module + "/sandbox/...", Module + "/auth/..."},
	},
	NoDeps{
		Why:    "the runner links no Docker or Kubernetes client",
		From:   Patterns{Module + "/runner/...", Module + "/cmd/runner"},
		To:     containerClients,
		Except: cgroupLibrary,
	},
	OnlyImporters{
		Why:       "mcp-go is known only to the MCP edge",
		Importers: Patterns{Module + "/gateway/mcpedge"},
		Of:        Patterns{"github.com/mark3labs/mcp-go/..."},
	},
	NoDeps{
		Why:  "the fleet keeps sandboxes and speaks no protocol",
		From: Patterns{Module + "/gateway/fleet"},
		To: Patterns{Module + "/gateway", Module + "/gateway/mcpedge", Module + "/gateway/e2bbackend", Module + "/gateway/e2b/...",
			"github.com/mark3labs/mcp-go/..."},
	},
	NoDeps{
		Why:  "the MCP edge runs no tool and touches no sandbox",
		From: Patterns{Module + "/gateway/mcpedge"},
		To:   Patterns{Module + "/gateway", Module + "/gateway/fleet", Module + "/gateway/e2bbackend", Module + "/sandbox/...", Module + "/runner/..."},
	},
	NoDeps{
		Why:    "the MCP surface's types are data: they import no gateway package and not mcp-go",
		From:   Patterns{Module + "/gateway/mcpapi"},
		To:     Patterns{Module + "/...", "github.com/mark3labs/mcp-go/..."},
		Except: Patterns{Module + "/gateway/mcpapi"},
	},
	NoDeps{
		Why:  "the tools, resources and prompts build the MCP surface's types and know neither the MCP edge nor mcp-go",
		From: Patterns{Module + "/gateway/tools", Module + "/gateway/resources"},
		To:   Patterns{Module + "/gateway", Module + "/gateway/mcpedge", Module + "/gateway/e2bbackend", "github.com/mark3labs/mcp-go/..."},
	},
	NoDeps{
		Why:  "the E2B adapter knows nothing of MCP",
		From: Patterns{Module + "/gateway/e2bbackend"},
		To:   Patterns{Module + "/gateway", Module + "/gateway/mcpedge", "github.com/mark3labs/mcp-go/..."},
	},
}

// containerClients are the trees the Docker and Kubernetes clients and
// their libraries come from.
var containerClients = Patterns{
	"github.com/docker/...",
	"github.com/moby/...",
	"github.com/containerd/...",
	"k8s.io/...",
	"sigs.k8s.io/...",
}

// cgroupLibrary is what the runner takes from those trees, none of it a
// client: runner/cgroup sets the runner's own cgroup limits with
// containerd's cgroups library, which brings containerd's logger, moby's
// user-namespace check and Docker's size parser.
var cgroupLibrary = Patterns{
	"github.com/containerd/cgroups/v3/...",
	"github.com/containerd/log",
	"github.com/moby/sys/userns",
	"github.com/docker/go-units",
}
