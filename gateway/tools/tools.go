package tools

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/sandgate/sandgate/gateway/mcpapi"

	"github.com/sandgate/sandgate/auth"
	"github.com/sandgate/sandgate/gateway/audit"
)

// Tool categories, the unit a deployment enables or disables.
const (
	catFiles   = "files"
	catExec    = "exec"
	catCode    = "code"
	catSandbox = "sandbox"
	catAudit   = "audit"
	catBrowser = "browser"
	catNetwork = "network"
)

var AllCategories = []string{catFiles, catExec, catCode, catSandbox, catAudit, catBrowser, catNetwork, catCustom}

// toolDef is one MCP tool: its schema and how to run it.
type toolDef struct {
	category string
	tool     mcpapi.Tool
	// needsBox: the call runs in a sandbox, resolved from sandbox_id or the
	// session before run is called.
	needsBox bool
	// scopes the caller's token must carry (from requiredScopes).
	scopes []string
	// summary returns the redacted audit summary of the arguments: paths,
	// a cut command, a language; never contents, stdin or env values.
	summary func(args map[string]any) map[string]string
	run     func(ctx context.Context, c *call) (*mcpapi.CallToolResult, error)
}

// requiredScopes maps every tool to the OAuth scopes a call needs. One
// table, so what a scope grants can be read in one place; toolDefs panics
// on a tool missing from it.
var requiredScopes = map[string][]string{
	"read_file":        {auth.ScopeFilesRead},
	"list_directory":   {auth.ScopeFilesRead},
	"file_info":        {auth.ScopeFilesRead},
	"search_files":     {auth.ScopeFilesRead},
	"search_code":      {auth.ScopeFilesRead},
	"write_file":       {auth.ScopeFilesWrite},
	"edit_file":        {auth.ScopeFilesWrite},
	"make_directory":   {auth.ScopeFilesWrite},
	"move_path":        {auth.ScopeFilesWrite},
	"remove_path":      {auth.ScopeFilesWrite},
	"run_shell":        {auth.ScopeExec},
	"run_code":         {auth.ScopeExec},
	"process_list":     {auth.ScopeExec},
	"process_output":   {auth.ScopeExec},
	"process_kill":     {auth.ScopeExec},
	"process_input":    {auth.ScopeExec},
	"sandbox_create":   {auth.ScopeExec},
	"sandbox_info":     {auth.ScopeExec},
	"sandbox_destroy":  {auth.ScopeExec},
	"sandbox_pause":    {auth.ScopeExec},
	"sandbox_resume":   {auth.ScopeExec},
	"sandbox_network":  {auth.ScopeExec},
	"sandbox_snapshot": {auth.ScopeExec},
	"snapshot_list":    {auth.ScopeExec},
	"snapshot_delete":  {auth.ScopeExec},
	"sandbox_fork":     {auth.ScopeExec},
	"audit_log":        {auth.ScopeAudit},

	"browser_navigate":         {auth.ScopeBrowser},
	"browser_navigate_back":    {auth.ScopeBrowser},
	"browser_snapshot":         {auth.ScopeBrowser},
	"browser_click":            {auth.ScopeBrowser},
	"browser_hover":            {auth.ScopeBrowser},
	"browser_type":             {auth.ScopeBrowser},
	"browser_fill_form":        {auth.ScopeBrowser},
	"browser_select_option":    {auth.ScopeBrowser},
	"browser_press_key":        {auth.ScopeBrowser},
	"browser_wait_for":         {auth.ScopeBrowser},
	"browser_screenshot":       {auth.ScopeBrowser},
	"browser_evaluate":         {auth.ScopeBrowser},
	"browser_console_messages": {auth.ScopeBrowser},
	"browser_tabs":             {auth.ScopeBrowser},
	"browser_resize":           {auth.ScopeBrowser},
	"browser_pdf":              {auth.ScopeBrowser},
	"browser_route":            {auth.ScopeBrowser},
	"browser_record_start":     {auth.ScopeBrowser},
	"browser_record_stop":      {auth.ScopeBrowser},

	"interpreter_restart": {auth.ScopeExec},
	"run_notebook":        {auth.ScopeExec},
	"http_request":        {auth.ScopeExec},
}

// toolDefs lists every tool the gateway knows, in tools/list order.
func toolDefs() []toolDef {
	var defs []toolDef
	defs = append(defs, fileTools()...)
	defs = append(defs, searchTools()...)
	defs = append(defs, pathTools()...)
	defs = append(defs, execTools()...)
	defs = append(defs, codeTools()...)
	defs = append(defs, notebookTools()...)
	defs = append(defs, sandboxTools()...)
	defs = append(defs, snapshotTools()...)
	defs = append(defs, auditTools()...)
	defs = append(defs, browserTools()...)
	defs = append(defs, browserNetTools()...)
	defs = append(defs, networkTools()...)
	for i := range defs {
		d := &defs[i]
		d.scopes = requiredScopes[d.tool.Name]
		if len(d.scopes) == 0 {
			panic(fmt.Sprintf("gateway: tool %s has no required scope", d.tool.Name))
		}
		d.tool.Description += " Requires scope: " + strings.Join(d.scopes, ", ") + "."
		d.tool.InputSchema = singleTypeSchema(d.tool.InputSchema)
		a := &d.tool.Annotations
		// A sandbox reaches the network only through its egress proxy,
		// by its allowlist (empty unless the operator allows more): only
		// the tools made to reach out say they do, whatever the
		// specification's default says.
		a.OpenWorldHint = d.category == catNetwork
		if a.ReadOnlyHint {
			a.IdempotentHint = true
		}
	}
	return defs
}

func AllToolNames() []string {
	var names []string
	for _, d := range toolDefs() {
		names = append(names, d.tool.Name)
	}
	return names
}

// enabledTools applies the configuration's category and name filters.
func enabledTools(cfg Config) []toolDef {
	var out []toolDef
	for _, d := range toolDefs() {
		if len(cfg.Categories) > 0 && !slices.Contains(cfg.Categories, d.category) {
			continue
		}
		if len(cfg.EnabledTools) > 0 && !slices.Contains(cfg.EnabledTools, d.tool.Name) {
			continue
		}
		if slices.Contains(cfg.DisabledTools, d.tool.Name) {
			continue
		}
		if reachesOut(d.category) && cfg.EgressPolicy.AllowsAny() {
			// The operator lets sandboxes reach the network: what runs
			// code or loads pages in one may reach it too.
			d.tool.Annotations.OpenWorldHint = true
		}
		out = append(out, d)
	}
	return out
}

// reachesOut reports whether a category's tools run code or load pages
// that may use the sandbox's egress.
func reachesOut(category string) bool {
	return category == catExec || category == catCode || category == catBrowser
}

// summarize picks the named string arguments, cut to about 200 bytes.
func summarize(keys ...string) func(map[string]any) map[string]string {
	return func(args map[string]any) map[string]string {
		out := map[string]string{}
		for _, k := range keys {
			if v, ok := args[k].(string); ok {
				out[k] = audit.Clip(v, 200)
			}
		}
		return out
	}
}
