package browser_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runner/browser"
	"github.com/sandgate/sandgate/runner/protocol"
	"github.com/sandgate/sandgate/sandbox/sandboxtest"
)

const (
	browserImage = "sandgate/browser:latest"
	inImageEnv   = "SANDGATE_BROWSER_TEST_IN_IMAGE"
)

// newManager returns a Manager on a real Chromium. Without Chromium on
// this host the calling test runs again inside the browser image (the
// same Debian as the hosts it is built on) and newManager returns nil:
// the caller returns, and passes or fails with the inner run. It never
// skips when Docker is required (CI).
func newManager(t *testing.T, with ...func(*browser.Options)) *browser.Manager {
	t.Helper()
	path := browser.Find()
	if path == "" {
		if os.Getenv(inImageEnv) != "" {
			t.Fatalf("no Chromium in %s", browserImage)
		}
		runInImage(t)
		return nil
	}
	opts := browser.Options{ExecPath: path, Workspace: t.TempDir()}
	for _, f := range with {
		f(&opts)
	}
	m := browser.New(opts)
	t.Cleanup(func() { m.Close() })
	return m
}

// runInImage runs the current test's binary, for this test only, in a
// container of the browser image as the sandbox user, without network.
func runInImage(t *testing.T) {
	t.Helper()
	sandboxtest.RequireImage(t, browserImage)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var name []string
	for _, part := range strings.Split(t.Name(), "/") {
		name = append(name, "^"+regexp.QuoteMeta(part)+"$")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "docker", "run", "--rm", "--network", "none", "--user", "1000:1000",
		"--tmpfs", "/tmp:exec", "--tmpfs", "/workspace", "-e", inImageEnv+"=1",
		"-v", exe+":/sandgate-test/"+filepath.Base(exe)+":ro", browserImage,
		"/sandgate-test/"+filepath.Base(exe), "-test.run", strings.Join(name, "/"), "-test.count=1", "-test.v")
	out, err := cmd.CombinedOutput()
	t.Logf("ran in %s:\n%s", browserImage, out)
	if err != nil {
		t.Fatalf("the test failed in %s: %v", browserImage, err)
	}
}

// do runs one action and fails the test on an error.
func do(t *testing.T, m *browser.Manager, req protocol.BrowserRequest) protocol.BrowserResult {
	t.Helper()
	res, err := m.Do(t.Context(), req)
	if err != nil {
		t.Fatalf("%s: %v", req.Action, err)
	}
	return res
}

// fails runs one action and returns its error, failing the test unless
// there is one that contains every want.
func fails(t *testing.T, m *browser.Manager, req protocol.BrowserRequest, want ...string) error {
	t.Helper()
	_, err := m.Do(t.Context(), req)
	if err == nil {
		t.Fatalf("%s %+v: no error", req.Action, req)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("%s: error %q lacks %q", req.Action, err, w)
		}
	}
	return err
}

// page writes html to a file and returns its file:// URL.
func page(t *testing.T, html string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "page.html")
	if err := os.WriteFile(p, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
	return "file://" + p
}

// browserChildren counts this process's Chromium children.
func browserChildren(t *testing.T) int {
	t.Helper()
	n := 0
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		if i < 0 || !strings.Contains(s[:i], "(chrom") {
			continue
		}
		f := strings.Fields(s[i+1:]) // state, ppid, ...
		if len(f) > 1 && f[0] != "Z" && f[1] == fmt.Sprint(os.Getpid()) {
			n++
		}
	}
	return n
}

// TestLazyStartAndClose: New starts nothing; the first action starts
// Chromium as a child; Close kills it.
func TestLazyStartAndClose(t *testing.T) {
	m := newManager(t)
	if m == nil {
		return
	}
	if n := browserChildren(t); n != 0 {
		t.Fatalf("%d Chromium processes before the first action", n)
	}
	do(t, m, protocol.BrowserRequest{Action: protocol.BrowserSnapshot})
	if n := browserChildren(t); n != 1 {
		t.Fatalf("%d Chromium children after the first action, want 1", n)
	}
	m.Close()
	if n := browserChildren(t); n != 0 {
		t.Fatalf("%d Chromium children after Close", n)
	}
	fails(t, m, protocol.BrowserRequest{Action: protocol.BrowserSnapshot}, "shutting down")
}

// TestRestartAfterCrash: a killed browser is noticed by the next action,
// which starts a new one and says so.
func TestRestartAfterCrash(t *testing.T) {
	m := newManager(t)
	if m == nil {
		return
	}
	do(t, m, protocol.BrowserRequest{Action: protocol.BrowserNavigate, URL: "data:text/html,<title>one</title>"})
	if err := exec.Command("pkill", "-9", "-P", fmt.Sprint(os.Getpid()), "chrom").Run(); err != nil {
		t.Fatalf("pkill: %v", err)
	}
	res := do(t, m, protocol.BrowserRequest{Action: protocol.BrowserNavigate, URL: "data:text/html,<title>two</title>"})
	if !strings.Contains(res.Message, "started a new one") || res.Title != "two" {
		t.Fatalf("after the crash: %+v", res)
	}
	if res := do(t, m, protocol.BrowserRequest{Action: protocol.BrowserSnapshot}); strings.Contains(res.Message, "new one") {
		t.Fatalf("restarted twice: %s", res.Message)
	}
}

// TestActions covers what the gateway's end-to-end test leaves out: time
// limits, a hung page, dialogs, popups and shadow DOM.
func TestActions(t *testing.T) {
	m := newManager(t)
	if m == nil {
		return
	}
	u := page(t, `<title>Actions</title>
<button id="late" onclick="setTimeout(() => document.body.insertAdjacentHTML('beforeend', '<p id=done>done later</p>'), 300)">Later</button>
<button id="alert" onclick="alert('hi there'); document.title = 'after alert'">Alert</button>
<a id="popup" href="data:text/html,<title>popup</title>" target="_blank">Open</a>
<button id="hang" onclick="setTimeout(() => { while (true) {} }, 50)">Hang</button>
<div id="host"></div>
<script>
  const root = document.getElementById('host').attachShadow({mode: 'open'});
  root.innerHTML = '<button onclick="this.textContent = \'shadow clicked\'">In shadow</button>';
</script>`)
	do(t, m, protocol.BrowserRequest{Action: protocol.BrowserNavigate, URL: u})

	t.Run("wait_for", func(t *testing.T) {
		do(t, m, protocol.BrowserRequest{Action: protocol.BrowserClick, Selector: "#late"})
		do(t, m, protocol.BrowserRequest{Action: protocol.BrowserWaitFor, WaitText: "done later", TimeoutMs: 5000})
		do(t, m, protocol.BrowserRequest{Action: protocol.BrowserWaitFor, WaitSelector: "#done", TimeoutMs: 5000})
		fails(t, m, protocol.BrowserRequest{Action: protocol.BrowserWaitFor, WaitText: "never", TimeoutMs: 500}, `text "never" did not appear`)
		fails(t, m, protocol.BrowserRequest{Action: protocol.BrowserWaitFor, WaitMs: 2000, TimeoutMs: 1000}, "shorter than the call's timeout")
		fails(t, m, protocol.BrowserRequest{Action: protocol.BrowserWaitFor, WaitSelector: "[[bad", TimeoutMs: 2000}, "not valid")
	})

	t.Run("shadow DOM", func(t *testing.T) {
		snap := do(t, m, protocol.BrowserRequest{Action: protocol.BrowserSnapshot}).Snapshot
		ref := regexp.MustCompile(`button "In shadow" \[ref=(e[0-9]+)\]`).FindStringSubmatch(snap)
		if ref == nil {
			t.Fatalf("no shadow button in the snapshot:\n%s", snap)
		}
		do(t, m, protocol.BrowserRequest{Action: protocol.BrowserClick, Ref: ref[1]})
		if snap := do(t, m, protocol.BrowserRequest{Action: protocol.BrowserSnapshot}).Snapshot; !strings.Contains(snap, `button "shadow clicked"`) {
			t.Fatalf("the shadow button was not clicked:\n%s", snap)
		}
	})

	t.Run("dialogs are accepted", func(t *testing.T) {
		res := do(t, m, protocol.BrowserRequest{Action: protocol.BrowserClick, Selector: "#alert", TimeoutMs: 5000})
		if res.Title != "after alert" {
			t.Fatalf("the page is still blocked by its alert: %+v", res)
		}
		msgs := do(t, m, protocol.BrowserRequest{Action: protocol.BrowserConsole}).Console
		if len(msgs) == 0 || msgs[len(msgs)-1] != (protocol.ConsoleMessage{Level: "dialog", Text: "alert: hi there (accepted)"}) {
			t.Fatalf("console = %+v", msgs)
		}
	})

	t.Run("popups join the tabs", func(t *testing.T) {
		res := do(t, m, protocol.BrowserRequest{Action: protocol.BrowserClick, Selector: "#popup"})
		if !strings.Contains(res.Message, "opened a new tab (index 1)") {
			t.Fatalf("click on a target=_blank link: %q", res.Message)
		}
		one := 1
		do(t, m, protocol.BrowserRequest{Action: protocol.BrowserTabs, TabAction: "close", Index: &one})
	})

	t.Run("a hung page is reported", func(t *testing.T) {
		do(t, m, protocol.BrowserRequest{Action: protocol.BrowserClick, Selector: "#hang", TimeoutMs: 5000})
		began := time.Now()
		fails(t, m, protocol.BrowserRequest{Action: protocol.BrowserSnapshot, TimeoutMs: 1000}, "did not finish within 1s", "does not respond", "browser_tabs")
		if d := time.Since(began); d > 5*time.Second {
			t.Fatalf("reporting the hung page took %v", d)
		}
		zero := 0
		res := do(t, m, protocol.BrowserRequest{Action: protocol.BrowserTabs, TabAction: "close", Index: &zero, TimeoutMs: 10000})
		if len(res.Tabs) != 1 || res.Tabs[0].URL != "about:blank" {
			t.Fatalf("after closing the hung tab: %+v", res)
		}
		do(t, m, protocol.BrowserRequest{Action: protocol.BrowserNavigate, URL: "data:text/html,<title>fine</title>"})
	})

	t.Run("bad requests", func(t *testing.T) {
		fails(t, m, protocol.BrowserRequest{Action: "fly"}, "unknown browser action")
		fails(t, m, protocol.BrowserRequest{Action: protocol.BrowserClick, Ref: "e1", Selector: "#x"}, "not both")
		fails(t, m, protocol.BrowserRequest{Action: protocol.BrowserNavigate, URL: "javascript:alert(1)"}, "not allowed")
		fails(t, m, protocol.BrowserRequest{Action: protocol.BrowserTabs, TabAction: "shuffle"}, "unknown tabs action")
		fails(t, m, protocol.BrowserRequest{Action: protocol.BrowserPDF}, "path is empty")
		fails(t, m, protocol.BrowserRequest{Action: protocol.BrowserEvaluate, Expression: "window"}, "cannot be returned as JSON")
	})
}
