package resources

import (
	"context"
	"path"
	"slices"
	"strings"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/gateway/mcpapi"
	"github.com/sandgate/sandgate/runner/protocol"
)

// maxEmbedBytes bounds a file a prompt embeds: a README longer than this
// is left for the agent to read.
const maxEmbedBytes = 64 << 10

// readmeNames are the files run-tests embeds, first found first.
var readmeNames = []string{"README.md", "README", "README.rst", "README.txt"}

// embedReadme returns repo's README in the caller's sandbox as an
// embedded resource, or nil when there is none, the caller may not read
// files, or no sandbox is chosen. Reading it is audited as a
// resources/read.
func (g *Service) embedReadme(ctx context.Context, sandboxID, repo string) *mcpapi.EmbeddedResource {
	p, session, err := caller(ctx)
	if err != nil || !slices.Contains(p.Scopes, auth.ScopeFilesRead) {
		return nil
	}
	b, err := g.defaultBox(ctx, p, session, sandboxID)
	if err != nil {
		return nil
	}
	var found *mcpapi.EmbeddedResource
	dir := strings.TrimSuffix(repo, "/")
	_ = g.tools.RunReadOnly(ctx, p, session, b, toolResourcesRead, map[string]string{"uri": audit.Clip(sandboxURI(b.ID(), dir), 200), "embed": "README"}, func(ctx context.Context, rc *protocol.Client) error {
		for _, name := range readmeNames {
			file := path.Join(dir, name)
			var fi protocol.FileInfo
			if rc.Call(ctx, protocol.OpFileStat, protocol.PathRequest{Path: file}, &fi) != nil || fi.Type != protocol.TypeFile || fi.Size > maxEmbedBytes {
				continue
			}
			contents, err := g.readContents(ctx, b, rc, sandboxURI(b.ID(), file), file)
			if err != nil {
				return err
			}
			if t, ok := contents[0].(mcpapi.TextResourceContents); ok {
				e := mcpapi.NewEmbeddedResource(t)
				found = &e
			}
			return nil
		}
		return nil
	})
	return found
}

// Suggestions for arguments whose values are not in the sandbox.
var (
	testCommands = []string{"go test ./...", "pytest -q", "npm test", "cargo test", "make test", "python -m unittest"}
	pageURLs     = []string{"http://localhost:3000", "http://localhost:5000", "http://localhost:8000", "http://localhost:8080"}
	devices      = []string{"desktop", "mobile", "tablet"}
)

// CompletePrompt completes the prompts' arguments.
func (g *Service) CompletePrompt(ctx context.Context, req mcpapi.CompleteRequest) (*mcpapi.Completion, error) {
	prompt, arg := req.Ref, req.Argument
	switch {
	case arg == "sandbox_id":
		return g.completeSandboxID(ctx, req.Value)
	case prompt == promptRunTests && arg == "repo":
		return g.completePath(ctx, req.Context["sandbox_id"], req.Value)
	case prompt == promptRunTests && arg == "test_command":
		return prefixed(testCommands, req.Value), nil
	case prompt == promptCapturePage && arg == "url":
		return prefixed(pageURLs, req.Value), nil
	case prompt == promptCapturePage && arg == "device":
		return prefixed(devices, req.Value), nil
	}
	return completion(nil), nil
}

// prefixed is the values of list that start with prefix.
func prefixed(list []string, prefix string) *mcpapi.Completion {
	var out []string
	for _, v := range list {
		if strings.HasPrefix(v, prefix) {
			out = append(out, v)
		}
	}
	return completion(out)
}
