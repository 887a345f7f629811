package browser_test

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/runner/browser"
	"github.com/sandgate/sandgate/runner/protocol"
)

func TestPNGSize(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewRGBA(image.Rect(0, 0, 390, 844))); err != nil {
		t.Fatal(err)
	}
	if w, h, ok := browser.PNGSize(buf.Bytes()); !ok || w != 390 || h != 844 {
		t.Fatalf("PNGSize = %d, %d, %v", w, h, ok)
	}
	for _, bad := range [][]byte{nil, []byte("GIF89a..."), buf.Bytes()[:20]} {
		if _, _, ok := browser.PNGSize(bad); ok {
			t.Errorf("PNGSize(%q) ok", bad)
		}
	}
}

func TestCheckURL(t *testing.T) {
	t.Parallel()
	for u, want := range map[string]string{
		"http://127.0.0.1:8000/":             "",
		"https://localhost/x":                "",
		"file:///workspace/index.html":       "",
		"data:text/html,<h1>hi</h1>":         "",
		"about:blank":                        "",
		"":                                   "url is empty",
		"127.0.0.1:8000/page.html":           "not absolute",
		"/workspace/index.html":              "not absolute",
		"chrome://settings":                  `scheme "chrome" is not allowed`,
		"javascript:alert(1)":                `scheme "javascript" is not allowed`,
		"view-source:http://127.0.0.1:8000/": `scheme "view-source" is not allowed`,
	} {
		err := browser.CheckURL(u)
		if (want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), want) {
			t.Errorf("CheckURL(%q) = %v, want %q", u, err, want)
		}
	}
}

// TestConsoleIsBounded: a chatty page keeps the newest messages, says how
// many it dropped, and never splits a character.
func TestConsoleIsBounded(t *testing.T) {
	t.Parallel()
	limit, textLimit := browser.MaxConsole()
	l := browser.NewConsoleLog()
	for i := 0; i < limit+7; i++ {
		l.Add(protocol.ConsoleMessage{Level: "log", Text: strings.Repeat("é", i)})
	}
	l.Add(protocol.ConsoleMessage{Level: "log", Text: strings.Repeat("é", textLimit)})
	msgs, dropped := l.Snapshot()
	if len(msgs) != limit || dropped != 8 {
		t.Fatalf("%d messages, %d dropped", len(msgs), dropped)
	}
	last := msgs[len(msgs)-1].Text
	if len(last) > textLimit+len("…") || !strings.HasSuffix(last, "é…") {
		t.Fatalf("long message kept as %d bytes ending %q", len(last), last[len(last)-8:])
	}
}

func TestNavSettle(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	n := browser.NewNav()

	began := time.Now()
	if nav, err := n.Settle(ctx, n.Seq()); nav || err != nil {
		t.Fatalf("no navigation: %v, %v", nav, err)
	}
	if d := time.Since(began); d > 2*time.Second {
		t.Fatalf("settle without a navigation took %v", d)
	}

	// A navigation that began since seq is waited for until it ends.
	// It begins before Settle is called: a Begin from a goroutine that
	// sleeps first races settleGrace (60 ms) on a loaded machine, and
	// whether the browser reports a navigation within the grace is not
	// what this checks.
	seq := n.Seq()
	n.Begin()
	ended := make(chan struct{})
	go func() {
		time.Sleep(200 * time.Millisecond)
		close(ended)
		n.End()
	}()
	if nav, err := n.Settle(ctx, seq); !nav || err != nil {
		t.Fatalf("navigation: %v, %v", nav, err)
	}
	select {
	case <-ended:
	default:
		t.Fatal("Settle returned before the navigation ended")
	}

	seq = n.Seq()
	n.Begin() // never ends
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if nav, err := n.Settle(short, seq); !nav || err == nil {
		t.Fatalf("unfinished navigation: %v, %v", nav, err)
	}
}
