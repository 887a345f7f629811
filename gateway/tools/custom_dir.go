package tools

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sandgate/sandgate/gateway/manifest"
	"github.com/sandgate/sandgate/gateway/mcpapi"
)

// customPoll is how often the tools directory is looked at. A poll stats
// each manifest (at most manifest.MaxFiles) and reads only the changed
// ones; it also sees what inotify would miss, such as a Kubernetes
// ConfigMap's symlink swap.
const customPoll = time.Second

// customTools are the operator's tools from Config.ToolsDir.
type customTools struct {
	dir *manifest.Dir // only the reload goroutine (and New) touch it
	mu  sync.RWMutex
	// defs are the custom tools served now. A tool is in defs whenever
	// mcp-go serves it, so the scope check (missingScopes) never misses
	// one: added here before mcp-go has it, removed after.
	defs     map[string]toolDef
	manifest *prometheus.GaugeVec
	lastErr  string // the last directory error logged, to log it once
}

// StartCustom loads the tools directory, if one is configured, and
// watches it until ctx ends. A directory that cannot be read at start is
// an error; later, the tools loaded stay.
func (g *Toolbox) StartCustom(ctx context.Context, publish Publisher) error {
	if g.cfg.ToolsDir == "" {
		return nil
	}
	g.publish = publish
	ct := &customTools{dir: manifest.NewDir(g.cfg.ToolsDir, ManifestOptions(g.cfg.Limits.CallTimeout, g.publish.CheckInputSchema)), defs: map[string]toolDef{},
		manifest: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sandgate_custom_tool_manifests",
			Help: "Custom tool manifest files by state: served (as written), invalid (not served as written; see the warnings logged)."}, []string{"state"})}
	g.metrics.MustRegister(ct.manifest)
	g.custom = ct
	if err := g.reloadCustomTools(); err != nil {
		return fmt.Errorf("tools directory %s: %w", g.cfg.ToolsDir, err)
	}
	go func() {
		t := time.NewTicker(customPoll)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := g.reloadCustomTools(); err != nil && err.Error() != ct.lastErr {
					g.log.Warn("custom tools: directory unreadable; the tools loaded stay", "dir", g.cfg.ToolsDir, "error", err)
					ct.lastErr = err.Error()
				}
			}
		}
	}()
	return nil
}

// reloadCustomTools reads the directory again and serves what changed;
// every client is told with notifications/tools/list_changed (see
// announceToolsChanged).
func (g *Toolbox) reloadCustomTools() error {
	ct := g.custom
	rep, err := ct.dir.Reload()
	if err != nil {
		return err
	}
	ct.lastErr = ""
	for _, p := range rep.Problems {
		g.log.Warn("custom tool manifest refused", "dir", g.cfg.ToolsDir, "error", p)
	}
	ct.manifest.WithLabelValues("served").Set(float64(len(rep.Loaded)))
	ct.manifest.WithLabelValues("invalid").Set(float64(rep.Invalid))
	if !rep.Changed() {
		return nil
	}
	var add []mcpapi.ServerTool
	remove := slices.Clone(rep.Removed)
	ct.mu.Lock()
	for _, m := range rep.Upserted {
		d, sch, err := g.customToolDef(m)
		switch {
		case err != nil:
			g.log.Warn("custom tool manifest refused", "dir", g.cfg.ToolsDir, "file", m.File, "tool", m.Name, "error", err)
		case len(g.cfg.Categories) > 0 && !slices.Contains(g.cfg.Categories, m.Category):
			g.log.Info("custom tool not served: its category is not enabled (--tools)", "file", m.File, "tool", m.Name, "category", m.Category)
		default:
			ct.defs[m.Name] = d
			g.args.put(m.Name, sch)
			add = append(add, mcpapi.ServerTool{Tool: d.tool, Handler: g.handler(d)})
			g.log.Info("custom tool loaded", "file", m.File, "tool", m.Name, "scope", m.Scope, "category", m.Category)
			continue
		}
		if _, ok := ct.defs[m.Name]; ok {
			remove = append(remove, m.Name)
		}
	}
	ct.mu.Unlock()
	if len(remove) > 0 {
		g.publish.RemoveTools(remove...)
		ct.mu.Lock()
		for _, name := range remove {
			delete(ct.defs, name)
		}
		ct.mu.Unlock()
		g.args.drop(remove...)
		g.log.Info("custom tools removed", "tools", remove)
	}
	if len(add) > 0 {
		g.publish.AddTools(add...)
	}
	return nil
}

// lookupTool returns the tool served under name: built-in or custom.
func (g *Toolbox) lookupTool(name string) (toolDef, bool) {
	if d, ok := g.defs[name]; ok {
		return d, true
	}
	if g.custom == nil {
		return toolDef{}, false
	}
	g.custom.mu.RLock()
	defer g.custom.mu.RUnlock()
	d, ok := g.custom.defs[name]
	return d, ok
}
