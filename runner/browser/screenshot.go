package browser

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/sandgate/sandgate/runner/protocol"
)

// maxShotPixels bounds a screenshot's height in device pixels, Chromium's
// own limit for one capture; a longer page is cut there.
const maxShotPixels = 16384

func checkScreenshot(req protocol.BrowserRequest) error {
	if req.FullPage && (req.Ref != "" || req.Selector != "") {
		return invalidf("give full_page or an element (ref or selector), not both")
	}
	if req.Ref != "" && req.Selector != "" {
		return invalidf("give ref or selector, not both")
	}
	return nil
}

// runScreenshot captures the viewport, the full page, or one element, as
// PNG.
func runScreenshot(s *session, req protocol.BrowserRequest) (protocol.BrowserResult, error) {
	p := page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng}
	what := "the viewport"
	note := ""
	switch {
	case req.FullPage:
		m, err := chromedp.Call(s.ctx, page.GetLayoutMetrics, cdp.Empty{})
		if err != nil {
			return protocol.BrowserResult{}, wrapf(err, "measure the page")
		}
		w, h := m.CSSContentSize.Width, m.CSSContentSize.Height
		if limit := float64(maxShotPixels) / s.m.view.Scale; h > limit {
			note = fmt.Sprintf("; the page is %.0f px tall, cut at %.0f", h, limit)
			h = limit
		}
		p.Clip = &page.Viewport{Width: math.Ceil(w), Height: math.Ceil(h), Scale: 1}
		p.CaptureBeyondViewport = ptr(true)
		what = "the full page"
	case req.Ref != "" || req.Selector != "":
		what = describeTarget(req.Ref, req.Selector)
		el, err := s.element(req.Ref, req.Selector)
		if err != nil {
			return protocol.BrowserResult{}, err
		}
		var r struct{ X, Y, Width, Height float64 }
		if err := s.callOn(el, &r, "rect"); err != nil {
			return protocol.BrowserResult{}, wrapf(err, "measure %s", what)
		}
		if r.Width < 1 || r.Height < 1 {
			return protocol.BrowserResult{}, failf("%s has no visible size (%.0fx%.0f)", what, r.Width, r.Height)
		}
		p.Clip = &page.Viewport{X: r.X, Y: r.Y, Width: r.Width, Height: min(r.Height, float64(maxShotPixels)/s.m.view.Scale), Scale: 1}
		p.CaptureBeyondViewport = ptr(true)
	}
	shot, err := chromedp.Call(s.ctx, page.CaptureScreenshot, p)
	if err != nil {
		return protocol.BrowserResult{}, wrapf(err, "capture %s", what)
	}
	w, h, ok := pngSize(shot.Data)
	if !ok {
		return protocol.BrowserResult{}, failf("capture %s: the browser returned no PNG", what)
	}
	res := protocol.BrowserResult{PNG: shot.Data, Width: w, Height: h}
	res.URL, res.Title = s.pageInfo()
	res.Message = fmt.Sprintf("screenshot of %s, %dx%d px PNG%s", what, w, h, note)
	return res, nil
}

// pngSize reads the width and height from a PNG's IHDR chunk.
func pngSize(b []byte) (int, int, bool) {
	const sig = "\x89PNG\r\n\x1a\n"
	if len(b) < 24 || string(b[:8]) != sig || string(b[12:16]) != "IHDR" {
		return 0, 0, false
	}
	return int(binary.BigEndian.Uint32(b[16:20])), int(binary.BigEndian.Uint32(b[20:24])), true
}
