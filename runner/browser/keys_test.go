package browser_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/runner/browser"
	"github.com/sandgate/sandgate/runner/protocol"
)

func TestParseKey(t *testing.T) {
	t.Parallel()
	// Each event as type:key:code:modifiers:text.
	for _, tc := range []struct {
		spec string
		want string
	}{
		{"Enter", "keyDown:Enter:Enter:0: char:Enter:Enter:0:\r keyUp:Enter:Enter:0:"},
		{"a", "keyDown:a:KeyA:0: char:a:KeyA:0:a keyUp:a:KeyA:0:"},
		{"A", "keyDown:A:KeyA:8: char:A:KeyA:8:A keyUp:A:KeyA:8:"},
		{"Tab", "keyDown:Tab:Tab:0: keyUp:Tab:Tab:0:"},
		{"Shift+Tab", "keyDown:Tab:Tab:8: keyUp:Tab:Tab:8:"},
		{"ArrowDown", "keyDown:ArrowDown:ArrowDown:0: keyUp:ArrowDown:ArrowDown:0:"},
		{"arrowdown", "keyDown:ArrowDown:ArrowDown:0: keyUp:ArrowDown:ArrowDown:0:"},
		{"Escape", "keyDown:Escape:Escape:0: keyUp:Escape:Escape:0:"},
		{"Esc", "keyDown:Escape:Escape:0: keyUp:Escape:Escape:0:"},
		{"Backspace", "keyDown:Backspace:Backspace:0: keyUp:Backspace:Backspace:0:"},
		{"F5", "keyDown:F5:F5:0: keyUp:F5:F5:0:"},
		{"Space", "keyDown: :Space:0: char: :Space:0:  keyUp: :Space:0:"},
		// A shortcut types no character.
		{"Control+a", "keyDown:a:KeyA:2: keyUp:a:KeyA:2:"},
		{"ctrl+shift+A", "keyDown:A:KeyA:10: keyUp:A:KeyA:10:"},
		{"Meta+ArrowLeft", "keyDown:ArrowLeft:ArrowLeft:4: keyUp:ArrowLeft:ArrowLeft:4:"},
		{"+", "keyDown:+:Equal:8: char:+:Equal:8:+ keyUp:+:Equal:8:"},
		{"Control++", "keyDown:+:Equal:10: keyUp:+:Equal:10:"},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			evs, err := browser.ParseKey(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range evs {
				got = append(got, fmt.Sprintf("%s:%s:%s:%d:%s", e.Type, e.Key, e.Code, e.Modifiers, e.Text))
			}
			if g := strings.Join(got, " "); g != tc.want {
				t.Fatalf("ParseKey(%q) =\n %q\nwant\n %q", tc.spec, g, tc.want)
			}
		})
	}
}

func TestParseKeyErrors(t *testing.T) {
	t.Parallel()
	for spec, want := range map[string]string{
		"":          "key is empty",
		"NoSuchKey": `unknown key "NoSuchKey"`,
		"Hyper+a":   `unknown modifier "Hyper"`,
		"a+":        "unknown",
	} {
		_, err := browser.ParseKey(spec)
		if err == nil || !strings.Contains(err.Error(), want) || protocol.CodeOf(err) != protocol.CodeInvalid {
			t.Errorf("ParseKey(%q) = %v, want an invalid-argument error containing %q", spec, err, want)
		}
	}
}
