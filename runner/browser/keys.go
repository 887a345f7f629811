package browser

import (
	"strings"
	"unicode/utf8"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp/kb"
)

// modifiers are the names press_key accepts before a '+', with their
// DevTools bits.
var modifiers = map[string]kb.Modifier{
	"alt": kb.ModifierAlt, "option": kb.ModifierAlt,
	"control": kb.ModifierCtrl, "ctrl": kb.ModifierCtrl,
	"meta": kb.ModifierMeta, "cmd": kb.ModifierMeta, "command": kb.ModifierMeta,
	"shift": kb.ModifierShift,
}

// keyAliases are other names for keys than their DOM key value.
var keyAliases = map[string]string{
	"space": " ", "spacebar": " ", "esc": "Escape", "return": "Enter",
	"del": "Delete", "up": "ArrowUp", "down": "ArrowDown", "left": "ArrowLeft",
	"right": "ArrowRight", "pgup": "PageUp", "pgdn": "PageDown", "ins": "Insert",
}

// namedKeys maps DOM key values longer than one character ("Enter",
// "ArrowDown", "F5") to the rune chromedp's kb table encodes them with.
var namedKeys = func() map[string]rune {
	m := map[string]rune{}
	for r, k := range kb.Keys {
		if utf8.RuneCountInString(k.Key) < 2 {
			continue
		}
		name := strings.ToLower(k.Key)
		if old, ok := m[name]; !ok || r < old {
			m[name] = r
		}
	}
	return m
}()

// parseKey turns a key name such as "Enter", "a", "ArrowDown" or
// "Control+Shift+Tab" into the key events that press and release it.
func parseKey(spec string) ([]*input.DispatchKeyEventParams, error) {
	if spec == "" {
		return nil, invalidf("key is empty; give a key name like Enter, Tab, Escape, ArrowDown, or a character like a")
	}
	var parts []string
	switch {
	case spec == "+":
		parts = []string{"+"}
	case strings.HasSuffix(spec, "++"): // "Control++"
		parts = append(strings.Split(spec[:len(spec)-2], "+"), "+")
	default:
		parts = strings.Split(spec, "+")
	}
	name := parts[len(parts)-1]
	var mods kb.Modifier
	for _, p := range parts[:len(parts)-1] {
		m, ok := modifiers[strings.ToLower(p)]
		if !ok {
			return nil, invalidf("unknown modifier %q in key %q; use Control, Shift, Alt or Meta", p, spec)
		}
		mods |= m
	}
	r, ok := keyRune(name)
	if !ok {
		return nil, invalidf("unknown key %q; use a key name (Enter, Tab, Escape, Backspace, Delete, ArrowUp/Down/Left/Right, Home, End, PageUp, PageDown, F1-F12, Space) or one character, with modifiers like Control+a", name)
	}
	evs := kb.Encode(r)
	out := evs[:0]
	for _, e := range evs {
		e.Modifiers |= int64(mods)
		// A character typed with Control, Alt or Meta is a shortcut, not
		// text: no char event, as a real keyboard does.
		if e.Type == kb.KeyChar && mods&^kb.ModifierShift != 0 {
			continue
		}
		out = append(out, e)
	}
	return out, nil
}

func keyRune(name string) (rune, bool) {
	if utf8.RuneCountInString(name) == 1 {
		r, _ := utf8.DecodeRuneInString(name)
		return r, true
	}
	if a, ok := keyAliases[strings.ToLower(name)]; ok {
		name = a
		if utf8.RuneCountInString(name) == 1 {
			return []rune(name)[0], true
		}
	}
	r, ok := namedKeys[strings.ToLower(name)]
	return r, ok
}
