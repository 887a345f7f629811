package manifest_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/gateway/manifest"
)

// named is a valid manifest for tool name running echo word.
func named(name, word string) []byte {
	return valid(func(m map[string]any) {
		m["name"] = name
		m["command"] = []any{"echo", word}
	})
}

// write replaces a file the way an operator should, by renaming, and
// moves its mtime on so that a rewrite within the clock's resolution is
// still seen.
func write(t *testing.T, dir, file string, data []byte) {
	t.Helper()
	tmp := filepath.Join(dir, ".tmp-"+file)
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	bump := time.Now().Add(time.Duration(len(data)%1000+1) * time.Second)
	if err := os.Chtimes(tmp, bump, bump); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, file)); err != nil {
		t.Fatal(err)
	}
}

func reload(t *testing.T, d *manifest.Dir) manifest.Report {
	t.Helper()
	rep, err := d.Reload()
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func loadedNames(rep manifest.Report) []string {
	var names []string
	for _, m := range rep.Loaded {
		names = append(names, m.Name+"="+m.Command[1])
	}
	return names
}

func upserted(rep manifest.Report) []string {
	var names []string
	for _, m := range rep.Upserted {
		names = append(names, m.Name)
	}
	return names
}

func TestDirReload(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := manifest.NewDir(dir, testOptions)
	steps := []struct {
		name     string
		change   func()
		loaded   []string
		upserted []string
		removed  []string
		problems []string // substrings, one per new problem
		invalid  int
	}{
		{name: "empty", change: func() {}},
		{name: "add", change: func() { write(t, dir, "a.json", named("alpha", "1")) },
			loaded: []string{"alpha=1"}, upserted: []string{"alpha"}},
		{name: "ignores other files", change: func() {
			write(t, dir, "notes.txt", []byte("hi"))
			write(t, dir, ".hidden.json", []byte("{"))
		}, loaded: []string{"alpha=1"}},
		{name: "nothing new", change: func() {}, loaded: []string{"alpha=1"}},
		{name: "change", change: func() { write(t, dir, "a.json", named("alpha", "2")) },
			loaded: []string{"alpha=2"}, upserted: []string{"alpha"}},
		{name: "invalid change keeps previous", change: func() { write(t, dir, "a.json", []byte(`{"name": "alpha",`)) },
			loaded: []string{"alpha=2"}, problems: []string{"a.json: not a JSON manifest", "previous version of tool alpha stays loaded"}, invalid: 1},
		{name: "problem reported once", change: func() {}, loaded: []string{"alpha=2"}, invalid: 1},
		{name: "invalid new file not loaded", change: func() {
			write(t, dir, "b.json", valid(func(m map[string]any) { m["name"] = "beta"; m["scope"] = "root" }))
		},
			loaded: []string{"alpha=2"}, problems: []string{"b.json: scope:", "(not loaded)"}, invalid: 2},
		{name: "fix both", change: func() {
			write(t, dir, "a.json", named("alpha", "3"))
			write(t, dir, "b.json", named("beta", "1"))
		}, loaded: []string{"alpha=3", "beta=1"}, upserted: []string{"alpha", "beta"}},
		{name: "clash keeps the loaded tool", change: func() { write(t, dir, "0.json", named("beta", "x")) },
			loaded: []string{"alpha=3", "beta=1"}, problems: []string{`0.json: name: "beta" is already declared by b.json`}, invalid: 1},
		{name: "clash resolves when the name frees", change: func() { os.Remove(filepath.Join(dir, "b.json")) },
			loaded: []string{"beta=x", "alpha=3"}, upserted: []string{"beta"}},
		{name: "rename", change: func() { write(t, dir, "a.json", named("gamma", "1")) },
			loaded: []string{"beta=x", "gamma=1"}, upserted: []string{"gamma"}, removed: []string{"alpha"}},
		{name: "remove", change: func() { os.Remove(filepath.Join(dir, "0.json")) },
			loaded: []string{"gamma=1"}, removed: []string{"beta"}},
	}
	for _, s := range steps {
		s.change()
		rep := reload(t, d)
		if got := loadedNames(rep); !slices.Equal(got, s.loaded) {
			t.Errorf("%s: loaded %v, want %v", s.name, got, s.loaded)
		}
		if got := upserted(rep); !slices.Equal(got, s.upserted) {
			t.Errorf("%s: upserted %v, want %v", s.name, got, s.upserted)
		}
		if !slices.Equal(rep.Removed, s.removed) {
			t.Errorf("%s: removed %v, want %v", s.name, rep.Removed, s.removed)
		}
		if rep.Invalid != s.invalid {
			t.Errorf("%s: %d invalid, want %d", s.name, rep.Invalid, s.invalid)
		}
		var msgs []string
		for _, p := range rep.Problems {
			msgs = append(msgs, p.Error())
		}
		all := strings.Join(msgs, "\n")
		for _, want := range s.problems {
			if !strings.Contains(all, want) {
				t.Errorf("%s: problems %q lack %q", s.name, all, want)
			}
		}
		if len(s.problems) == 0 && len(msgs) > 0 {
			t.Errorf("%s: unexpected problems %q", s.name, all)
		}
	}
}

func TestDirMissing(t *testing.T) {
	t.Parallel()
	d := manifest.NewDir(filepath.Join(t.TempDir(), "nope"), testOptions)
	if _, err := d.Reload(); err == nil {
		t.Fatal("reload of a missing directory succeeded")
	}
}

// A file touched without changing is not reported as changed.
func TestDirTouch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := manifest.NewDir(dir, testOptions)
	write(t, dir, "a.json", named("alpha", "1"))
	reload(t, d)
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "a.json"), later, later); err != nil {
		t.Fatal(err)
	}
	if rep := reload(t, d); rep.Changed() {
		t.Errorf("touch reported as a change: %+v", rep)
	}
}
