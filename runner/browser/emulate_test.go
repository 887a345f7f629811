package browser_test

import (
	"strings"
	"testing"

	"github.com/sandgate/sandgate/runner/browser"
)

func TestDevices(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		device        string
		width, height int
		want          browser.View
		wantUA        string
	}{
		{"mobile", 0, 0, browser.View{Device: "mobile", Width: 390, Height: 844, Scale: 3, Mobile: true, Touch: true}, "iPhone"},
		{"Mobile", 0, 0, browser.View{Device: "mobile", Width: 390, Height: 844, Scale: 3, Mobile: true, Touch: true}, "iPhone"},
		{"tablet", 0, 0, browser.View{Device: "tablet", Width: 820, Height: 1180, Scale: 2, Mobile: true, Touch: true}, "iPad"},
		{"desktop", 0, 0, browser.View{Device: "desktop", Width: 1280, Height: 800, Scale: 1}, ""},
		{"", 1024, 768, browser.View{Device: "custom", Width: 1024, Height: 768, Scale: 1}, ""},
		{"", 0, 600, browser.View{Device: "custom", Width: 1280, Height: 600, Scale: 1}, ""},
		{"iPhone-15", 0, 0, browser.View{Device: "iphone-15", Width: 393, Height: 852, Scale: 3, Mobile: true, Touch: true}, "iPhone"},
		{"pixel-8", 0, 0, browser.View{Device: "pixel-8", Width: 412, Height: 915, Scale: 2.625, Mobile: true, Touch: true}, "Pixel 8"},
		{"ipad", 0, 0, browser.View{Device: "ipad", Width: 820, Height: 1180, Scale: 2, Mobile: true, Touch: true}, "iPad"},
		{"desktop-hd", 0, 0, browser.View{Device: "desktop-hd", Width: 1920, Height: 1080, Scale: 1}, ""},
		{"mobile", 0, 700, browser.View{Device: "mobile", Width: 390, Height: 700, Scale: 3, Mobile: true, Touch: true}, "iPhone"},
	} {
		got, err := browser.ResolveDevice(tc.device, tc.width, tc.height)
		if err != nil {
			t.Fatalf("%q %dx%d: %v", tc.device, tc.width, tc.height, err)
		}
		if !strings.Contains(got.UA, tc.wantUA) || (tc.wantUA == "") != (got.UA == "") {
			t.Errorf("%q: user agent %q, want one with %q", tc.device, got.UA, tc.wantUA)
		}
		got.UA = ""
		if got != tc.want {
			t.Errorf("%q %dx%d = %+v, want %+v", tc.device, tc.width, tc.height, got, tc.want)
		}
	}
}

func TestDeviceErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		device        string
		width, height int
		want          string
	}{
		{"watch", 0, 0, "unknown device"},
		{"iphone", 0, 0, "desktop, desktop-hd, galaxy-s23, ipad, ipad-pro, iphone-15, iphone-15-pro-max, iphone-se, laptop, mobile, pixel-8, pixel-tablet, tablet"},
		{"", 0, 0, "give width and height, or a device"},
		{"", 50, 600, "width 50 is out of range"},
		{"", 800, 5000, "height 5000 is out of range"},
	} {
		if _, err := browser.ResolveDevice(tc.device, tc.width, tc.height); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q %dx%d: %v, want %q", tc.device, tc.width, tc.height, err, tc.want)
		}
	}
}
