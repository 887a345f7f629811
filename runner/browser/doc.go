// Package browser drives the sandbox's Chromium for the browser tools: a
// Manager implements runner.Browser, one action per call.
//
// Lifetime. Chromium starts on the first action, not with the runner, and
// is reused by every later action. It is started through chromedp's exec
// allocator with the DevTools protocol on a pipe, as a direct child of the
// runner with Pdeathsig SIGKILL (it dies with the runner) and without
// Setsid or Setpgid: it must stay in the runner's own session, which the
// process sweep of runner/process never touches (see its tree, rule 4).
// chromedp waits for the browser process with exec.Cmd.Wait at once, so
// the runner's reaper never has to; orphans of a killed browser (zygote,
// renderers) are killed by chromedp by their --user-data-dir and, re-parented
// to the runner as child subreaper, reaped by runner/process's reaper.
//
// Supervision. Before each action the Manager checks that the browser is
// alive (its connection stands and it answers a version request); if not
// (crashed, killed, out of memory) it starts a new one and says so in the
// result's Message. Every action runs under a timeout (the request's
// TimeoutMs, default 30 s); a page that hangs is reported, never waited on
// without end. Close kills the browser and removes its directories.
//
// Refs. Snapshot lists the page's structure with a ref ("e12") on every
// interactive element. The listing is computed by world.js in an isolated
// world of the page's document, which keeps the ref → element map; the
// page's own scripts share the DOM but not that world. A ref stays valid
// until the next snapshot of the tab or until its document is replaced (a
// navigation); refs are numbered from one counter for the browser's life,
// so a ref is never reused for another element, and a stale one is an
// error that tells the caller to take a new snapshot.
package browser
