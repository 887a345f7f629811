package gateway_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/png"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sandgate/sandgate/gateway"
	"github.com/sandgate/sandgate/sandbox/sandboxtest"
)

const browserImage = "sandgate/browser:latest"

// testPage is the app the browser tests drive, served from the sandbox.
const testPage = `<!doctype html>
<html><head><title>Sandgate test page</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body>
<h1>Browser test</h1>
<p id="status">idle</p>
<button id="go" onclick="document.getElementById('status').textContent = 'clicked'">Press me</button>
<form id="f" onsubmit="event.preventDefault(); document.getElementById('greeting').textContent = 'Hello, ' + document.getElementById('name').value + '!'">
  <label for="name">Your name</label> <input id="name" name="name">
  <label for="color">Colour</label> <select id="color"><option value="r">Red</option><option value="g">Green</option></select>
  <label><input type="checkbox" id="agree"> Agree</label>
</form>
<p id="greeting"></p>
<div id="hover" onmouseover="this.textContent = 'hovered'">hover me</div>
<input id="keys" aria-label="keys" onkeydown="document.getElementById('lastkey').textContent = event.key">
<p id="lastkey"></p>
<a href="long.html">Long page</a>
<script>console.log('page loaded'); console.error('an error for the test');</script>
</body></html>
`

// browserBox is one sandbox of the browser image, driven through a
// sessionless client.
type browserBox struct {
	t  *testing.T
	tg *testGateway
	c  *client.Client
	id string
}

// startBrowserBox starts a gateway that allows the browser image, creates
// a sandbox from it, and serves testPage (and a long page) on
// http://127.0.0.1:8000 inside it.
func startBrowserBox(t *testing.T) *browserBox {
	t.Helper()
	return startBrowserBoxOn(t, startGateway)
}

// startBrowserBoxOn is startBrowserBox on a gateway that start starts.
func startBrowserBoxOn(t *testing.T, start func(testing.TB, func(*gateway.Config)) *testGateway) *browserBox {
	t.Helper()
	sandboxtest.RequireImage(t, browserImage)
	tg := start(t, func(c *gateway.Config) {
		c.Images = append(c.Images, browserImage)
		// Chromium needs more than the harness's lean defaults: about a
		// hundred threads and a few hundred MiB.
		c.Limits.MemoryBytes = 512 << 20
		c.Limits.Pids = 256
		c.Limits.CallTimeout = 60 * time.Second
	})
	c := modernClient(t, tg.URL)
	res := mustOK(t, "sandbox_create", call(t, c, "sandbox_create", map[string]any{"image": browserImage}))
	b := &browserBox{t: t, tg: tg, c: c, id: structuredAs[map[string]any](t, res)["sandbox_id"].(string)}
	long := "<title>Long</title>" + strings.Repeat("<p>A paragraph that makes the page long.</p>\n", 300)
	b.ok("write_file", map[string]any{"path": "site/page.html", "content": testPage})
	b.ok("write_file", map[string]any{"path": "site/long.html", "content": long})
	b.ok("run_shell", map[string]any{"command": "python3 -m http.server 8000 --bind 127.0.0.1 --directory /workspace/site", "background": true})
	b.ok("run_shell", map[string]any{"command": `for i in $(seq 100); do python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:8000/page.html')" 2>/dev/null && exit 0; sleep 0.1; done; exit 1`})
	return b
}

// call invokes tool on the box's sandbox.
func (b *browserBox) call(tool string, args map[string]any) *mcp.CallToolResult {
	b.t.Helper()
	all := map[string]any{"sandbox_id": b.id}
	for k, v := range args {
		all[k] = v
	}
	return call(b.t, b.c, tool, all)
}

func (b *browserBox) ok(tool string, args map[string]any) *mcp.CallToolResult {
	b.t.Helper()
	return mustOK(b.t, tool, b.call(tool, args))
}

// fails calls tool, expects isError, and returns its text.
func (b *browserBox) fails(tool string, args map[string]any, want ...string) string {
	b.t.Helper()
	res := b.call(tool, args)
	msg := text(res)
	if !res.IsError {
		b.t.Fatalf("%s %v: want isError, got %q", tool, args, msg)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			b.t.Fatalf("%s %v: error %q lacks %q", tool, args, msg, w)
		}
	}
	return msg
}

// eval returns browser_evaluate's JSON, decoded.
func (b *browserBox) eval(expr string) any {
	b.t.Helper()
	var v any
	if err := json.Unmarshal([]byte(text(b.ok("browser_evaluate", map[string]any{"expression": expr}))), &v); err != nil {
		b.t.Fatalf("browser_evaluate %q: text is not JSON: %v", expr, err)
	}
	return v
}

// snapshotRef takes a snapshot and returns the ref of the first line
// matching pattern (a regexp over the line before its ref).
func (b *browserBox) snapshotRef(pattern string) (string, string) {
	b.t.Helper()
	snap := text(b.ok("browser_snapshot", nil))
	m := regexp.MustCompile(pattern + `[^\n]*\[ref=(e[0-9]+)\]`).FindStringSubmatch(snap)
	if m == nil {
		b.t.Fatalf("snapshot has no %s with a ref:\n%s", pattern, snap)
	}
	return m[1], snap
}

// screenshot returns the decoded PNG of browser_screenshot.
func (b *browserBox) screenshot(args map[string]any) (int, int) {
	b.t.Helper()
	res := b.ok("browser_screenshot", args)
	for _, c := range res.Content {
		if img, ok := c.(mcp.ImageContent); ok {
			if img.MIMEType != "image/png" {
				b.t.Fatalf("screenshot MIME type %q", img.MIMEType)
			}
			raw, err := base64.StdEncoding.DecodeString(img.Data)
			if err != nil {
				b.t.Fatalf("screenshot data is not base64: %v", err)
			}
			cfg, err := png.DecodeConfig(bytes.NewReader(raw))
			if err != nil {
				b.t.Fatalf("screenshot is not a PNG: %v", err)
			}
			return cfg.Width, cfg.Height
		}
	}
	b.t.Fatalf("screenshot result has no image content: %q", text(res))
	return 0, 0
}

const pageURL = "http://127.0.0.1:8000/page.html"

// TestBrowserEndToEnd drives every browser tool through a real MCP client,
// the gateway, the runner and a real Chromium in the browser image.
func TestBrowserEndToEnd(t *testing.T) {
	t.Parallel()
	b := startBrowserBox(t)

	began := time.Now()
	res := b.ok("browser_navigate", map[string]any{"url": pageURL})
	t.Logf("first browser call (Chromium start + navigate): %v", time.Since(began))
	nav := structuredAs[map[string]any](t, res)
	if nav["status"] != float64(200) || nav["title"] != "Sandgate test page" || nav["url"] != pageURL {
		t.Fatalf("navigate = %v", nav)
	}
	began = time.Now()
	b.ok("browser_navigate", map[string]any{"url": pageURL})
	t.Logf("navigate (warm): %v", time.Since(began))
	info := structuredAs[map[string]any](t, b.ok("sandbox_info", nil))
	t.Logf("sandbox with Chromium and one page: %v", info)

	t.Run("Chromium runs at user code's nice", func(t *testing.T) {
		// Every Chromium process at a command's nice, below the
		// runner's (process.ExecAsUser). Their timer slack cannot be
		// read from inside the sandbox; TestExecAsUser checks it.
		r := structuredAs[execResult](t, b.ok("run_shell", map[string]any{"command": `
			for p in /proc/[0-9]*; do
				case "$(cat $p/comm 2>/dev/null)" in chromium*) echo "chromium $(cut -d' ' -f19 $p/stat)";; esac
			done | sort -u
			echo "runner $(cut -d' ' -f19 /proc/$PPID/stat)"
			echo "shell $(cut -d' ' -f19 /proc/$$/stat)"`}))
		if want := "chromium 10\nrunner 0\nshell 10\n"; r.Stdout != want {
			t.Fatalf("nice of Chromium's processes, the runner and a command:\n%s%s\nwant:\n%s", r.Stdout, r.Stderr, want)
		}
	})

	t.Run("click", func(t *testing.T) {
		ref, snap := b.snapshotRef(`button "Press me"`)
		for _, want := range []string{`heading "Browser test" [level=1]`, `textbox "Your name"`, `combobox "Colour"`, `link "Long page"`} {
			if !strings.Contains(snap, want) {
				t.Errorf("snapshot lacks %s:\n%s", want, snap)
			}
		}
		b.ok("browser_click", map[string]any{"ref": ref})
		if got := b.eval("document.getElementById('status').textContent"); got != "clicked" {
			t.Fatalf("after click, status = %v", got)
		}
		if _, snap := b.snapshotRef(`button "Press me"`); !strings.Contains(snap, "text: clicked") && !strings.Contains(snap, "paragraph: clicked") {
			t.Fatalf("snapshot after click does not show the new text:\n%s", snap)
		}
	})

	t.Run("type and submit", func(t *testing.T) {
		ref, _ := b.snapshotRef(`textbox "Your name"`)
		b.ok("browser_type", map[string]any{"ref": ref, "text": "Ada", "submit": true})
		wait := text(b.ok("browser_wait_for", map[string]any{"text": "Hello, Ada!"}))
		if !strings.Contains(wait, "appeared") {
			t.Fatalf("wait_for = %q", wait)
		}
		if wait := text(b.ok("browser_wait_for", map[string]any{"time": 0.2, "selector": "#greeting"})); !strings.Contains(wait, `selector "#greeting" matched`) {
			t.Fatalf("wait_for time and selector = %q", wait)
		}
	})

	t.Run("form controls and keys", func(t *testing.T) {
		b.ok("browser_select_option", map[string]any{"selector": "#color", "values": []string{"Green"}})
		b.ok("browser_fill_form", map[string]any{"fields": []map[string]any{
			{"selector": "#name", "value": "Grace"}, {"selector": "#agree", "value": "true"}, {"selector": "#color", "value": "r"}}})
		got := b.eval("[document.getElementById('name').value, document.getElementById('agree').checked, document.getElementById('color').value]")
		if fmt.Sprint(got) != "[Grace true r]" {
			t.Fatalf("after fill_form: %v", got)
		}
		b.fails("browser_select_option", map[string]any{"selector": "#color", "values": []string{"Purple"}}, "no option", "Red")
		b.ok("browser_hover", map[string]any{"selector": "#hover"})
		if got := b.eval("document.getElementById('hover').textContent"); got != "hovered" {
			t.Fatalf("after hover: %v", got)
		}
		b.ok("browser_click", map[string]any{"selector": "#keys"})
		b.ok("browser_press_key", map[string]any{"key": "ArrowDown"})
		if got := b.eval("document.getElementById('lastkey').textContent"); got != "ArrowDown" {
			t.Fatalf("after press_key: %v", got)
		}
		b.fails("browser_press_key", map[string]any{"key": "NoSuchKey"}, "unknown key")
	})

	t.Run("screenshots", func(t *testing.T) {
		began := time.Now()
		w, h := b.screenshot(nil)
		t.Logf("viewport screenshot: %v", time.Since(began))
		vp := b.eval("[innerWidth, innerHeight, devicePixelRatio]")
		if fmt.Sprint(vp) != fmt.Sprintf("[%d %d 1]", w, h) {
			t.Fatalf("viewport screenshot %dx%d, viewport %v", w, h, vp)
		}
		if ew, eh := b.screenshot(map[string]any{"selector": "#go"}); ew >= w || eh >= h || ew == 0 {
			t.Fatalf("element screenshot %dx%d is not smaller than the viewport %dx%d", ew, eh, w, h)
		}
		b.ok("browser_navigate", map[string]any{"url": "http://127.0.0.1:8000/long.html"})
		fw, fh := b.screenshot(map[string]any{"full_page": true})
		if fw != w || fh <= h {
			t.Fatalf("full page screenshot %dx%d, viewport %dx%d", fw, fh, w, h)
		}
		back := structuredAs[map[string]any](t, b.ok("browser_navigate_back", nil))
		if back["url"] != pageURL {
			t.Fatalf("back = %v", back)
		}
	})

	t.Run("evaluate and console", func(t *testing.T) {
		if got := b.eval("({n: 1 + 2, list: [1, 'two'], title: document.title})"); fmt.Sprint(got) != "map[list:[1 two] n:3 title:Sandgate test page]" {
			t.Fatalf("evaluate object = %v", got)
		}
		if got := b.eval("() => document.querySelectorAll('p').length"); got != float64(3) {
			t.Fatalf("evaluate function = %v", got)
		}
		if got := b.eval("const h = document.querySelector('h1'); return h.textContent"); got != "Browser test" {
			t.Fatalf("evaluate body = %v", got)
		}
		b.fails("browser_evaluate", map[string]any{"expression": "noSuchFunction()"}, "ReferenceError", "noSuchFunction")
		msgs := text(b.ok("browser_console_messages", nil))
		for _, want := range []string{"[log] page loaded", "[error] an error for the test"} {
			if !strings.Contains(msgs, want) {
				t.Fatalf("console lacks %q:\n%s", want, msgs)
			}
		}
	})

	t.Run("mobile emulation", func(t *testing.T) {
		b.ok("browser_resize", map[string]any{"device": "mobile"})
		if got := b.eval("[innerWidth, devicePixelRatio, navigator.maxTouchPoints > 0, /iPhone/.test(navigator.userAgent)]"); fmt.Sprint(got) != "[390 3 true true]" {
			t.Fatalf("mobile: %v", got)
		}
		if w, h := b.screenshot(nil); w != 390*3 || h != 844*3 {
			t.Fatalf("mobile screenshot %dx%d", w, h)
		}
		b.ok("browser_resize", map[string]any{"device": "desktop"})
		if got := b.eval("innerWidth"); got != float64(1280) {
			t.Fatalf("desktop: %v", got)
		}
		b.fails("browser_resize", map[string]any{"device": "watch"}, "unknown device")
	})

	t.Run("tabs", func(t *testing.T) {
		res := b.ok("browser_tabs", map[string]any{"action": "open", "url": "http://127.0.0.1:8000/long.html"})
		tabs := structuredAs[struct {
			Tabs []struct {
				Index   int    `json:"index"`
				URL     string `json:"url"`
				Current bool   `json:"current"`
			} `json:"tabs"`
		}](t, res).Tabs
		if len(tabs) != 2 || !tabs[1].Current || !strings.HasSuffix(tabs[1].URL, "/long.html") {
			t.Fatalf("after open: %+v", tabs)
		}
		if got := b.eval("document.title"); got != "Long" {
			t.Fatalf("the opened tab is not current: title %v", got)
		}
		b.ok("browser_tabs", map[string]any{"action": "select", "index": 0})
		if got := b.eval("document.title"); got != "Sandgate test page" {
			t.Fatalf("after select 0: title %v", got)
		}
		list := text(b.ok("browser_tabs", map[string]any{"action": "close", "index": 1}))
		if strings.Count(list, "\n") != 2 || !strings.Contains(list, "* 0: Sandgate test page") {
			t.Fatalf("after close:\n%s", list)
		}
		b.fails("browser_tabs", map[string]any{"action": "select", "index": 5}, "no tab 5")
	})

	t.Run("pdf", func(t *testing.T) {
		out := structuredAs[map[string]any](t, b.ok("browser_pdf", map[string]any{"path": "out/page.pdf"}))
		if out["path"] != "/workspace/out/page.pdf" || out["bytes"].(float64) < 1000 {
			t.Fatalf("pdf = %v", out)
		}
		info := structuredAs[map[string]any](t, b.ok("file_info", map[string]any{"path": "out/page.pdf"}))
		if info["size"] != out["bytes"] {
			t.Fatalf("file_info %v, pdf %v", info, out)
		}
		if got := text(b.ok("read_file", map[string]any{"path": "out/page.pdf", "offset": 0, "limit": 4})); got != "%PDF" {
			t.Fatalf("pdf starts with %q", got)
		}
	})

	t.Run("stale ref", func(t *testing.T) {
		ref, _ := b.snapshotRef(`button "Press me"`)
		b.ok("browser_navigate", map[string]any{"url": "http://127.0.0.1:8000/long.html"})
		b.fails("browser_click", map[string]any{"ref": ref}, "stale", "browser_snapshot")
		b.fails("browser_click", map[string]any{"ref": "e999999"}, "not in this tab's latest snapshot")
		b.fails("browser_click", map[string]any{"selector": "#nothing-here"}, "no element matches")
		b.fails("browser_click", map[string]any{}, "ref", "selector")
	})

	t.Run("no way out of the sandbox", func(t *testing.T) {
		u, err := url.Parse(b.tg.URL)
		if err != nil {
			t.Fatal(err)
		}
		// The gateway's own address: inside the sandbox 127.0.0.1 is the
		// sandbox's loopback, where nothing listens on that port.
		msg := b.fails("browser_navigate", map[string]any{"url": "http://" + u.Host + "/mcp"}, "ERR_CONNECTION_REFUSED")
		t.Logf("gateway address: %s", msg)
		// Link-local metadata address: the sandbox has no route at all, so
		// the connection fails in the kernel; no packet is sent.
		msg = b.fails("browser_navigate", map[string]any{"url": "http://169.254.169.254/latest/meta-data/"}, "no network")
		t.Logf("metadata address: %s", msg)
		b.fails("browser_navigate", map[string]any{"url": "chrome://version"}, "scheme")
	})

	t.Run("chromium is never swept", func(t *testing.T) {
		// A foreground call, and a background one killed, are both swept by
		// the runner; the browser, started before them, must survive.
		b.ok("run_shell", map[string]any{"command": "sleep 0.1 & echo done"})
		r := structuredAs[execResult](t, b.ok("run_shell", map[string]any{"command": "sleep 600", "background": true}))
		b.ok("process_kill", map[string]any{"process_id": r.ProcessID, "signal": "SIGKILL"})
		if msg := text(b.ok("browser_navigate", map[string]any{"url": pageURL})); strings.Contains(msg, "started a new one") {
			t.Fatalf("the browser was killed by a process sweep: %s", msg)
		}
	})

	t.Run("crash recovery", func(t *testing.T) {
		b.ok("run_shell", map[string]any{"command": "pkill -9 chromium"})
		began := time.Now()
		msg := text(b.ok("browser_navigate", map[string]any{"url": pageURL}))
		t.Logf("navigate after a crash (restart): %v", time.Since(began))
		if !strings.Contains(msg, "started a new one") {
			t.Fatalf("navigate after pkill does not say the browser restarted: %q", msg)
		}
		if _, snap := b.snapshotRef(`button "Press me"`); !strings.Contains(snap, "Browser test") {
			t.Fatalf("snapshot after restart:\n%s", snap)
		}
		// The killed browser's children were re-parented to the runner
		// (a child subreaper); its reaper must collect them.
		var ps string
		waitFor(t, 30*time.Second, "the killed browser's processes reaped", func() bool {
			ps = structuredAs[execResult](t, b.ok("run_shell", map[string]any{"command": "ps -eo stat=,comm= | grep chromium || true"})).Stdout
			return !strings.Contains(ps, "Z")
		})
		if !strings.Contains(ps, "chromium") {
			t.Fatalf("no browser left after the restart:\n%s", ps)
		}
	})
}

// TestBrowserNeedsTheBrowserImage: a sandbox of an image without Chromium
// says which image to use.
func TestBrowserNeedsTheBrowserImage(t *testing.T) {
	t.Parallel()
	tg := startGateway(t, nil)
	c := legacyClient(t, tg.URL)
	res := call(t, c, "browser_snapshot", nil)
	if !res.IsError || text(res) != `this sandbox's image has no browser; create one with sandbox_create {image: "sandgate/browser:latest"}` {
		t.Fatalf("browser_snapshot on the base image: isError=%v %q", res.IsError, text(res))
	}
}

// TestBrowserAgentWritesTests is the flow of an agent writing browser tests
// for an app: look at the running app, read its DOM, write a test that
// checks it, and run the test in the sandbox.
func TestBrowserAgentWritesTests(t *testing.T) {
	t.Parallel()
	b := startBrowserBox(t)
	b.ok("browser_navigate", map[string]any{"url": pageURL})
	b.screenshot(nil)
	ref, _ := b.snapshotRef(`button "Press me"`)
	b.ok("browser_click", map[string]any{"ref": ref})
	dom, ok := b.eval("document.documentElement.outerHTML").(string)
	if !ok || !strings.Contains(dom, "clicked") {
		t.Fatalf("DOM from evaluate: %v", dom)
	}
	b.ok("write_file", map[string]any{"path": "tests/dom.html", "content": dom})
	b.ok("write_file", map[string]any{"path": "tests/test_dom.py", "content": `import html.parser, pathlib, sys

class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids, self.where, self.text = {}, None, {}
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids[a["id"]] = tag
            self.where = a["id"]
    def handle_data(self, data):
        if self.where and data.strip():
            self.text.setdefault(self.where, data.strip())

p = Page()
p.feed(pathlib.Path(sys.argv[1]).read_text())
assert p.ids.get("go") == "button", p.ids
assert p.text.get("status") == "clicked", p.text
assert p.ids.get("name") == "input", p.ids
print("ok: 3 checks passed")
`})
	r := structuredAs[execResult](t, b.ok("run_shell", map[string]any{"command": "python3 tests/test_dom.py tests/dom.html"}))
	if r.ExitCode != 0 || !strings.Contains(r.Stdout, "3 checks passed") {
		t.Fatalf("the written test failed: %+v", r)
	}
}
