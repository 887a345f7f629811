package browser

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/sandgate/sandgate/runner/protocol"
)

// view is an emulated device: viewport in CSS pixels, device pixel ratio,
// mobile layout, touch and user agent ("" keeps the browser's own).
type view struct {
	Device string
	Width  int
	Height int
	Scale  float64
	Mobile bool
	Touch  bool
	UA     string
}

// User agents of the presets: what each device's own browser sends.
const (
	uaIPhone  = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1"
	uaIPad    = "Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1"
	uaPixel   = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36"
	uaGalaxy  = "Mozilla/5.0 (Linux; Android 14; SM-S911B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36"
	uaPixelTb = "Mozilla/5.0 (Linux; Android 14; Pixel Tablet) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36"
)

// devices are the presets of resize, the one list of them: viewports in
// CSS pixels and scale factors as the devices report them. mobile, tablet
// and desktop are the generic names; the others are real devices.
var devices = map[string]view{
	"mobile":  {Device: "mobile", Width: 390, Height: 844, Scale: 3, Mobile: true, Touch: true, UA: uaIPhone},
	"tablet":  {Device: "tablet", Width: 820, Height: 1180, Scale: 2, Mobile: true, Touch: true, UA: uaIPad},
	"desktop": {Device: "desktop", Width: 1280, Height: 800, Scale: 1},

	"iphone-se":         {Device: "iphone-se", Width: 375, Height: 667, Scale: 2, Mobile: true, Touch: true, UA: uaIPhone},
	"iphone-15":         {Device: "iphone-15", Width: 393, Height: 852, Scale: 3, Mobile: true, Touch: true, UA: uaIPhone},
	"iphone-15-pro-max": {Device: "iphone-15-pro-max", Width: 430, Height: 932, Scale: 3, Mobile: true, Touch: true, UA: uaIPhone},
	"pixel-8":           {Device: "pixel-8", Width: 412, Height: 915, Scale: 2.625, Mobile: true, Touch: true, UA: uaPixel},
	"galaxy-s23":        {Device: "galaxy-s23", Width: 360, Height: 780, Scale: 3, Mobile: true, Touch: true, UA: uaGalaxy},
	"ipad":              {Device: "ipad", Width: 820, Height: 1180, Scale: 2, Mobile: true, Touch: true, UA: uaIPad},
	"ipad-pro":          {Device: "ipad-pro", Width: 1024, Height: 1366, Scale: 2, Mobile: true, Touch: true, UA: uaIPad},
	"pixel-tablet":      {Device: "pixel-tablet", Width: 1280, Height: 800, Scale: 2, Mobile: true, Touch: true, UA: uaPixelTb},
	"laptop":            {Device: "laptop", Width: 1440, Height: 900, Scale: 2},
	"desktop-hd":        {Device: "desktop-hd", Width: 1920, Height: 1080, Scale: 1},
}

// Viewport bounds of resize, in CSS pixels.
const (
	minSide = 100
	maxSide = 4096
)

func deviceNames() string {
	names := make([]string, 0, len(devices))
	for n := range devices {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// resolveView is the view a resize asks for: the device preset (or the
// current view when none is named) with width and height, when given,
// replacing the preset's.
func resolveView(cur view, device string, width, height int) (view, error) {
	v := cur
	if device != "" {
		d, ok := devices[strings.ToLower(device)]
		if !ok {
			return v, invalidf("unknown device %q; use one of %s, or give width and height", device, deviceNames())
		}
		v = d
	} else if width == 0 && height == 0 {
		return v, invalidf("give width and height, or a device (%s)", deviceNames())
	}
	for _, side := range []struct {
		name string
		val  int
		dst  *int
	}{{"width", width, &v.Width}, {"height", height, &v.Height}} {
		if side.val == 0 {
			continue
		}
		if side.val < minSide || side.val > maxSide {
			return v, invalidf("%s %d is out of range; give %d to %d CSS pixels", side.name, side.val, minSide, maxSide)
		}
		*side.dst = side.val
		if device == "" {
			v.Device = "custom"
		}
	}
	return v, nil
}

// apply sets v on the tab of ctx; defaultUA is the browser's own agent.
func (v view) apply(ctx context.Context, defaultUA string) error {
	if _, err := chromedp.Call(ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
		Width: int64(v.Width), Height: int64(v.Height), DeviceScaleFactor: v.Scale, Mobile: v.Mobile,
		ScreenWidth: int64(v.Width), ScreenHeight: int64(v.Height),
	}); err != nil {
		return wrapf(err, "emulate a %dx%d viewport", v.Width, v.Height)
	}
	touch := emulation.SetTouchEmulationEnabledParams{Enabled: v.Touch}
	if v.Touch {
		touch.MaxTouchPoints = 5
	}
	if _, err := chromedp.Call(ctx, emulation.SetTouchEmulationEnabled, touch); err != nil {
		return wrapf(err, "emulate touch")
	}
	ua := v.UA
	if ua == "" {
		ua = defaultUA
	}
	if _, err := chromedp.Call(ctx, emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{UserAgent: ua}); err != nil {
		return wrapf(err, "set the user agent")
	}
	return nil
}

func checkResize(req protocol.BrowserRequest) error {
	_, err := resolveView(devices["desktop"], req.Device, req.Width, req.Height)
	return err
}

// runResize emulates the view on every tab, and on tabs opened later.
func runResize(s *session, req protocol.BrowserRequest) (protocol.BrowserResult, error) {
	v, err := resolveView(s.m.view, req.Device, req.Width, req.Height)
	if err != nil {
		return protocol.BrowserResult{}, err
	}
	if err := v.apply(s.ctx, s.in.userAgent); err != nil {
		return protocol.BrowserResult{}, err
	}
	s.m.view = v
	for _, t := range s.in.tabs {
		if t != s.t && t.attached {
			// Best effort: a hung background tab keeps its old view
			// rather than failing the resize of the current one.
			ctx, cancel := bound(t.ctx, s.call)
			_ = v.apply(ctx, s.in.userAgent)
			cancel()
		}
	}
	res := protocol.BrowserResult{Width: v.Width, Height: v.Height}
	res.URL, res.Title = s.pageInfo()
	res.Message = fmt.Sprintf("viewport %dx%d CSS px at scale %g (%s", v.Width, v.Height, v.Scale, v.Device)
	if v.Touch {
		res.Message += ", touch"
	}
	res.Message += "); every tab, and tabs opened later, use it"
	return res, nil
}
