package resources

import (
	"context"
	"fmt"
	"strings"

	"github.com/sandgate/sandgate/gateway/audit"
	"github.com/sandgate/sandgate/gateway/mcpapi"
)

// Prompt names, a closed set: CompletePrompt and the registry below
// agree on them.
const (
	promptRunTests     = "run-tests"
	promptDebugCommand = "debug-command"
	promptCapturePage  = "capture-page"
)

const sandboxIDArgDesc = "Sandbox to use, as returned by sandbox_create. Omit it in an MCP session to use the session's own sandbox."

// registerPrompts serves the prompts that show an agent how to use a
// sandbox's tools well for common jobs.
func (g *Service) registerPrompts(pub Publisher) {
	sandboxID := mcpapi.PromptArgument{Name: "sandbox_id", Description: sandboxIDArgDesc}
	pub.AddPrompt(mcpapi.Prompt{Name: promptRunTests, Title: "Run a repository's tests",
		Description: "Set up and run the tests of a repository in the sandbox, then explain the failures. Embeds the repository's README when it has one.",
		Arguments: []mcpapi.PromptArgument{
			{Name: "repo", Description: "The repository's directory in the sandbox, relative to /workspace or absolute (default: /workspace)."},
			{Name: "test_command", Description: "The command that runs the tests, if you know it (e.g. go test ./...); otherwise it is worked out from the repository."},
			sandboxID,
		}}, g.getRunTests)
	pub.AddPrompt(mcpapi.Prompt{Name: promptDebugCommand, Title: "Investigate a failing command",
		Description: "Run a failing command in the sandbox, find out why it fails with the file and process tools, and propose a fix.",
		Arguments: []mcpapi.PromptArgument{
			{Name: "command", Required: true, Description: "The shell command that fails, as you would type it."},
			sandboxID,
		}}, g.getDebugCommand)
	pub.AddPrompt(mcpapi.Prompt{Name: promptCapturePage, Title: "Capture a web page's state",
		Description: "Load a page in the sandbox's browser and capture its state: text snapshot, screenshot, console messages.",
		Arguments: []mcpapi.PromptArgument{
			{Name: "url", Required: true, Description: "The page to capture. Sandboxes reach only their own loopback unless the operator allows more, so this is usually a server started in the sandbox (http://localhost:PORT)."},
			{Name: "device", Description: "mobile, tablet or desktop (default desktop)."},
			sandboxID,
		}}, g.getCapturePage)
}

// sandboxNote tells the agent which sandbox_id to pass, if one was named.
func sandboxNote(args map[string]string) string {
	if id := args["sandbox_id"]; id != "" {
		return fmt.Sprintf(" Pass sandbox_id %q to every tool.", id)
	}
	return ""
}

func (g *Service) getRunTests(ctx context.Context, args map[string]string) (*mcpapi.GetPromptResult, error) {
	repo := strings.TrimSpace(args["repo"])
	if repo == "" {
		repo = "."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Run the tests of the repository at %s in the sandbox (relative paths are under /workspace).%s\n\n", repo, sandboxNote(args))
	b.WriteString("1. Look at the repository with list_directory and read_file: find the build files (go.mod, package.json, pyproject.toml or setup.cfg, Cargo.toml, Makefile) and any contributor notes on testing.\n")
	if cmd := strings.TrimSpace(args["test_command"]); cmd != "" {
		fmt.Fprintf(&b, "2. Run the tests with run_shell: `%s` (working directory %s).\n", cmd, repo)
	} else {
		b.WriteString("2. Work out the test command from the build files (go test ./..., npm test, pytest -q, cargo test, make test) and run it with run_shell in the repository's directory.\n")
	}
	b.WriteString("3. The sandbox has no network unless the operator allows it: if dependencies are missing, say which, and use what is vendored or already installed.\n")
	b.WriteString("4. For a run longer than a tool call allows, start it with background: true and read its output with process_output.\n")
	b.WriteString("5. Report the result: how many tests passed and failed, and for each failure the test, the message and the likely cause, with the file and line.\n")
	msgs := []mcpapi.PromptMessage{mcpapi.NewPromptMessage(mcpapi.RoleUser, mcpapi.NewTextContent(b.String()))}
	if readme := g.embedReadme(ctx, args["sandbox_id"], repo); readme != nil {
		msgs = append(msgs, mcpapi.NewPromptMessage(mcpapi.RoleUser, *readme))
	}
	return mcpapi.NewGetPromptResult("Run the tests of "+repo, msgs), nil
}

func (g *Service) getDebugCommand(_ context.Context, args map[string]string) (*mcpapi.GetPromptResult, error) {
	cmd := strings.TrimSpace(args["command"])
	if cmd == "" {
		return nil, fmt.Errorf("argument command is required: the shell command that fails")
	}
	text := fmt.Sprintf("This command fails in the sandbox: `%s`.%s\n\n", cmd, sandboxNote(args)) +
		"1. Run it with run_shell and read its exit code, stdout and stderr, and the timed_out and oom_killed flags.\n" +
		"2. If it was killed for time or memory, say so and try a smaller input or a longer timeout.\n" +
		"3. Otherwise follow the error: read the files it names with read_file, search the code with search_files, check paths and permissions with file_info, and look at processes it depends on with process_list.\n" +
		"4. Form one hypothesis at a time and test it with the smallest command that can tell.\n" +
		"5. Report the cause and a fix; apply the fix with edit_file only if it is clearly right, then run the command again to show it works."
	return mcpapi.NewGetPromptResult("Investigate why `"+audit.Clip(cmd, 80)+"` fails", []mcpapi.PromptMessage{mcpapi.NewPromptMessage(mcpapi.RoleUser, mcpapi.NewTextContent(text))}), nil
}

func (g *Service) getCapturePage(_ context.Context, args map[string]string) (*mcpapi.GetPromptResult, error) {
	url := strings.TrimSpace(args["url"])
	if url == "" {
		return nil, fmt.Errorf("argument url is required: the page to capture")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Capture the state of %s with the sandbox's browser.%s\n\n", url, sandboxNote(args))
	if d := strings.TrimSpace(args["device"]); d != "" {
		fmt.Fprintf(&b, "0. Emulate the device first: browser_resize with device %q.\n", d)
	}
	b.WriteString("1. browser_navigate to the URL and note the final URL, title and HTTP status.\n")
	b.WriteString("2. browser_snapshot for the page's text and interactive elements.\n")
	b.WriteString("3. browser_screenshot (full_page) for how it looks.\n")
	b.WriteString("4. browser_console_messages for errors and warnings the page logged.\n")
	b.WriteString("5. Summarise: what the page shows, what a user can do on it, and anything broken (errors, failed requests, missing content).")
	return mcpapi.NewGetPromptResult("Capture "+audit.Clip(url, 80), []mcpapi.PromptMessage{mcpapi.NewPromptMessage(mcpapi.RoleUser, mcpapi.NewTextContent(b.String()))}), nil
}
