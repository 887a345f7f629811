package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// clickPage is the page the click scenario drives. The sandbox has no
// network, so the page cannot come from a server of this program: like
// gateway/e2e_browser_test.go it is written into the sandbox's workspace,
// and opened as a file:// URL (which browser_navigate accepts).
const clickPage = `<!doctype html>
<html><head><title>load click</title></head><body>
<p id="status">idle</p>
<button id="go" onclick="document.getElementById('status').textContent = 'clicked ' + (++window.clicks)">Press me</button>
<script>window.clicks = 0</script>
</body></html>
`

// clickCalls bounds the timed clicks by count (--duration bounds them by
// time).
const clickCalls = 30

// runClick times browser_click in a sandbox of the browser image, made
// with sandbox_create in a session of its own.
func runClick(ctx context.Context, lr *loadRun) result {
	res := result{Scenario: "click", Callers: 1, Sessions: 1}
	_, _ = lr.pool.exactly(ctx, 0) // the browser's sandbox is all there is
	s, err := lr.client.openSession(ctx)
	if s != nil {
		defer closeQuietly(ctx, s)
	}
	if err != nil {
		res.Failure = err.Error()
		return res
	}
	began := time.Now()
	created, _, err := s.callTool(ctx, "sandbox_create", mustJSON(map[string]any{"image": browserImage}))
	if err != nil {
		res.Failure = fmt.Sprintf("%v (the gateway is started with --images %s; does the image exist?)", err, browserImage)
		return res
	}
	var info struct {
		SandboxID string `json:"sandbox_id"`
	}
	if err := json.Unmarshal(created.StructuredContent, &info); err != nil || info.SandboxID == "" {
		res.Failure = "sandbox_create returned no sandbox_id: " + truncate(created.text(), 200)
		return res
	}
	createMs := ms(time.Since(began))
	res.metric("create_ms", createMs, fmt.Sprintf("sandbox_create %.0f ms", createMs))
	inBox := func(tool string, args map[string]any) callSpec {
		args["sandbox_id"] = info.SandboxID
		return callSpec{tool, mustJSON(args), false}
	}
	defer func() {
		_, _, _ = inBox("sandbox_destroy", map[string]any{}).call(context.WithoutCancel(ctx), s)
	}()

	if _, _, err := inBox("write_file", map[string]any{"path": "click.html", "content": clickPage}).call(ctx, s); err != nil {
		res.Failure = err.Error()
		return res
	}
	// The first browser call starts Chromium.
	took, _, err := inBox("browser_navigate", map[string]any{"url": "file:///workspace/click.html"}).call(ctx, s)
	if err != nil {
		res.Failure = err.Error()
		return res
	}
	res.metric("first_navigate_ms", ms(took), fmt.Sprintf("first navigate (Chromium start) %.0f ms", ms(took)))

	click := inBox("browser_click", map[string]any{"selector": "#go"})
	if _, _, err := click.call(ctx, s); err != nil {
		res.Failure = "warm-up click: " + err.Error()
		return res
	}
	rec := &recorder{}
	cpu := startGatewayCPU(ctx, lr.gw)
	elapsed := timedPhase(ctx, lr.opts.duration, 1, clickCalls, func(ctx context.Context, _ int) {
		took, n, err := click.call(ctx, s)
		rec.addUnlessCancelled(ctx, took, n, err)
	})
	cpu.perCall(&res, rec.calls())
	res = rec.merge(res, elapsed)

	// The clicks must have reached the page, or the latency means nothing.
	count := inBox("browser_evaluate", map[string]any{"expression": "window.clicks"})
	got, _, err := s.callTool(ctx, count.tool, count.args)
	if want := fmt.Sprint(res.Calls - res.Errors + 1); err != nil || got.text() != want {
		res.Extra = append(res.Extra, fmt.Sprintf("WARNING: the page counted %q clicks, want %s (%v)", truncate(got.text(), 40), want, err))
	}
	return res
}

// closeQuietly deletes s, even when ctx has ended.
func closeQuietly(ctx context.Context, s *session) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
	defer cancel()
	_ = s.close(ctx)
}
