package gateway_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestBrowserDevicesRoutesRecording drives the device presets, request
// routes and the HAR recording through the gateway against a real Chromium
// in the browser image; pages come from a server inside the sandbox, and
// the mocked API's host exists nowhere.
func TestBrowserDevicesRoutesRecording(t *testing.T) {
	t.Parallel()
	b := startBrowserBox(t)
	b.ok("browser_navigate", map[string]any{"url": pageURL})

	t.Run("device presets", func(t *testing.T) {
		for _, tc := range []struct {
			device string
			width  float64
			scale  float64
			ua     string
		}{
			{"iphone-15", 393, 3, "iPhone"},
			{"pixel-8", 412, 2.625, "Pixel 8"},
			{"ipad", 820, 2, "iPad"},
		} {
			b.ok("browser_resize", map[string]any{"device": tc.device})
			got := b.eval("[window.innerWidth, window.devicePixelRatio, navigator.userAgent, navigator.maxTouchPoints]").([]any)
			if got[0] != tc.width || got[1] != tc.scale || !strings.Contains(got[2].(string), tc.ua) || got[3] != 5.0 {
				t.Errorf("%s: page reports %v, want width %v, scale %v, an agent with %q, touch", tc.device, got, tc.width, tc.scale, tc.ua)
			}
		}
		b.fails("browser_resize", map[string]any{"device": "nokia-3310"}, `unknown device "nokia-3310"`, "iphone-15", "pixel-8", "desktop-hd")
		b.ok("browser_resize", map[string]any{"device": "desktop"})
		if got := b.eval("[window.innerWidth, window.devicePixelRatio, navigator.userAgent.includes('iPad')]").([]any); got[0] != 1280.0 || got[1] != 1.0 || got[2] != false {
			t.Errorf("desktop: page reports %v", got)
		}
	})

	b.ok("browser_record_start", map[string]any{"path": "rec/session.har"})
	b.fails("browser_record_start", nil, "already running")

	t.Run("routes", func(t *testing.T) {
		added := text(b.ok("browser_route", map[string]any{"url": "*://api.example.com/*", "headers": map[string]any{"Content-Type": "application/json"}, "body": `{"user": "ada"}`}))
		if !strings.Contains(added, "added route r1") {
			t.Fatalf("add: %q", added)
		}
		b.ok("browser_route", map[string]any{"url": "*://ads.example.com/*", "block": true})
		b.ok("browser_route", map[string]any{"url": `/v2/`, "regex": true, "status": 201, "body": "two"})
		b.ok("browser_navigate", map[string]any{"url": pageURL})
		if got := b.eval("fetch('http://api.example.com/v1/user').then(r => r.json()).then(j => j.user)"); got != "ada" {
			t.Errorf("mocked fetch = %v", got)
		}
		if got := b.eval("fetch('http://api.example.com/v2/x').then(r => r.status + ' ' + r.headers.get('content-type')).then(s => s)"); got != "201 text/plain; charset=utf-8" {
			t.Errorf("regex route (newest wins) = %v", got)
		}
		// A JSON POST from another origin needs a CORS preflight first.
		if got := b.eval("fetch('http://api.example.com/v1/user', {method: 'POST', headers: {'Content-Type': 'application/json', 'X-Test': '1'}, body: '{}'}).then(r => r.json()).then(j => j.user, e => 'failed: ' + e)"); got != "ada" {
			t.Errorf("mocked POST with a preflight = %v", got)
		}
		if got := b.eval("fetch('http://ads.example.com/pixel.gif').then(() => 'loaded', e => 'failed: ' + e.name)"); got != "failed: TypeError" {
			t.Errorf("blocked fetch = %v", got)
		}
		type routeLine struct {
			ID      string `json:"id"`
			Pattern string `json:"pattern"`
			Hits    int    `json:"hits"`
		}
		listed := structuredAs[struct {
			Routes []routeLine `json:"routes"`
		}](t, b.ok("browser_route", map[string]any{"action": "list"}))
		if len(listed.Routes) != 3 || listed.Routes[0].ID != "r1" || listed.Routes[0].Hits < 2 || listed.Routes[1].Hits != 1 || listed.Routes[2].Hits != 1 {
			t.Errorf("list: %+v", listed.Routes)
		}
		b.ok("browser_route", map[string]any{"action": "remove", "id": "r1"})
		b.fails("browser_route", map[string]any{"action": "remove", "id": "r1"}, `no route "r1"`)
		b.fails("browser_route", map[string]any{"url": "(", "regex": true}, "regular expression")
		if got := b.eval("fetch('http://api.example.com/v1/user').then(() => 'reached', e => 'failed')"); got != "failed" {
			t.Errorf("after remove, the unmocked host (no network) = %v", got)
		}
		if msg := text(b.ok("browser_route", map[string]any{"action": "clear"})); !strings.Contains(msg, "removed 2 route(s)") {
			t.Errorf("clear: %q", msg)
		}
	})

	t.Run("recording", func(t *testing.T) {
		res := structuredAs[map[string]any](t, b.ok("browser_record_stop", nil))
		if res["entries"].(float64) < 5 || !strings.HasSuffix(res["path"].(string), "/rec/session.har") {
			t.Fatalf("stop: %v", res)
		}
		b.fails("browser_record_stop", nil, "no recording is running")
		var har struct {
			Log struct {
				Version string `json:"version"`
				Entries []struct {
					Request struct {
						Method string `json:"method"`
						URL    string `json:"url"`
					} `json:"request"`
					Response struct {
						Status  int `json:"status"`
						Content struct {
							Size     int    `json:"size"`
							MimeType string `json:"mimeType"`
						} `json:"content"`
					} `json:"response"`
					Time    float64 `json:"time"`
					Error   string  `json:"_error"`
					Timings struct {
						Wait float64 `json:"wait"`
					} `json:"timings"`
				} `json:"entries"`
			} `json:"log"`
		}
		if err := json.Unmarshal([]byte(text(b.ok("read_file", map[string]any{"path": "rec/session.har"}))), &har); err != nil {
			t.Fatalf("the recording is not JSON: %v", err)
		}
		seen := map[string]bool{}
		for _, e := range har.Log.Entries {
			switch {
			case e.Request.URL == pageURL && e.Response.Status == 200 && e.Response.Content.Size == len(testPage) && e.Response.Content.MimeType == "text/html":
				seen["page"] = true
			case e.Request.URL == "http://api.example.com/v1/user" && e.Response.Status == 200 && e.Response.Content.Size == len(`{"user": "ada"}`):
				seen["mocked"] = true
			case e.Request.URL == "http://ads.example.com/pixel.gif" && strings.Contains(e.Error, "ERR_BLOCKED_BY_CLIENT"):
				seen["blocked"] = true
			}
		}
		if har.Log.Version != "1.2" || !seen["page"] || !seen["mocked"] || !seen["blocked"] {
			t.Fatalf("recording (HAR %s) lacks requests, found %v: %+v", har.Log.Version, seen, har.Log.Entries)
		}
	})
}
