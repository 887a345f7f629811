package files_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/runner/files"
	"github.com/sandgate/sandgate/runner/protocol"
)

// FuzzEdit checks the invariants of the three edits on arbitrary content:
// replace_all equals strings.ReplaceAll (with CRLF applied in CRLF
// files), a non-unique replace changes nothing, and deleting the lines an
// insert added restores the file byte for byte.
func FuzzEdit(f *testing.F) {
	f.Add("a\nb\nc\n", "b", "B", uint8(1), "x")
	f.Add("a\r\nb\r\nc", "a\nb", "z\n", uint8(3), "y\nz")
	f.Add("", "x", "", uint8(0), "\n")
	f.Add("no newline", "o", "oo", uint8(1), "t\r\n")
	f.Add("x x x\n", "x", "x x", uint8(2), "\r")
	s := files.New(files.Options{Workspace: fuzzWorkspace(f)})
	f.Fuzz(func(t *testing.T, content, old, repl string, line uint8, text string) {
		if len(content) > 4096 || len(old) > 64 || len(repl) > 64 || len(text) > 256 {
			return
		}
		fuzzReplace(t, s, content, old, repl)
		fuzzInsertDelete(t, s, content, int(line), text)
	})
}

// fuzzReplace checks replace and replace_all of old by repl in content.
func fuzzReplace(t *testing.T, s *files.Service, content, old, repl string) {
	if old == "" || old == repl {
		return
	}
	eOld, eRepl := old, repl
	if crlf(content) {
		eOld, eRepl = toCRLF(old), toCRLF(repl)
	}
	n := strings.Count(content, eOld)
	p := putFile(t, s, content)
	res, err := s.Edit(t.Context(), protocol.EditRequest{Path: p, OldString: old, NewString: repl})
	switch {
	case n == 0:
		checkErr(t, err, protocol.CodeNoMatch)
	case n > 1:
		checkErr(t, err, protocol.CodeNotUnique)
	default:
		checkErr(t, err, "")
	}
	if n != 1 && readFile(t, p) != content {
		t.Fatalf("failed replace changed the file")
	}

	p = putFile(t, s, content)
	res, err = s.Edit(t.Context(), protocol.EditRequest{Path: p, OldString: old, NewString: repl, ReplaceAll: true})
	if n == 0 {
		checkErr(t, err, protocol.CodeNoMatch)
		return
	}
	checkErr(t, err, "")
	want := strings.ReplaceAll(content, eOld, eRepl)
	if got := readFile(t, p); got != want {
		t.Fatalf("replace_all(%q, %q, %q) = %q, want %q", content, old, repl, got, want)
	}
	if res.Replacements != n || res.TotalLines != lines(want) || res.Bytes != int64(len(want)) {
		t.Fatalf("replace_all result %+v, want %d replacements, %d lines", res, n, lines(want))
	}
}

// fuzzInsertDelete inserts text and deletes the inserted lines again.
func fuzzInsertDelete(t *testing.T, s *files.Service, content string, line int, text string) {
	if text == "" {
		return
	}
	total := lines(content)
	at := 1 + line%(total+1)
	p := putFile(t, s, content)
	ins, err := s.Edit(t.Context(), protocol.EditRequest{Path: p, InsertLine: at, Text: text})
	checkErr(t, err, "")
	after := readFile(t, p)
	if ins.LinesAdded < 1 || ins.TotalLines != total+ins.LinesAdded || lines(after) != ins.TotalLines {
		t.Fatalf("insert %q at %d into %q: result %+v, file %q", text, at, content, ins, after)
	}
	if content != "" && strings.HasSuffix(after, "\n") != strings.HasSuffix(content, "\n") {
		// Allowed only when appending an empty last line, which cannot
		// go without a newline; the file then cannot be restored.
		if at != total+1 || !(strings.HasSuffix(after, "\n\n") || strings.HasSuffix(after, "\n\r\n")) {
			t.Fatalf("insert %q at %d changed the trailing newline: %q → %q", text, at, content, after)
		}
		return
	}
	del, err := s.Edit(t.Context(), protocol.EditRequest{Path: p, StartLine: at, EndLine: at + ins.LinesAdded - 1})
	checkErr(t, err, "")
	if del.LinesRemoved != ins.LinesAdded || del.TotalLines != total {
		t.Fatalf("delete result %+v after insert %+v", del, ins)
	}
	if got := readFile(t, p); got != content {
		t.Fatalf("insert %q at %d then delete: %q → %q → %q", text, at, content, after, got)
	}
}

// FuzzResolvePath checks that resolution never panics and always gives a
// clean absolute path, or CodeInvalid for an empty or NUL-holding path.
func FuzzResolvePath(f *testing.F) {
	for _, p := range []string{"", "a", "../../x", "/abs//p/", ".", "a\x00b", "./././", "~", "//x"} {
		f.Add(p, "/workspace")
	}
	f.Add("x", "relative/ws")
	f.Add("y", "")
	f.Fuzz(func(t *testing.T, p, ws string) {
		got, err := files.ResolvePath(files.New(files.Options{Workspace: ws}), p)
		if p == "" || strings.ContainsRune(p, 0) {
			checkErr(t, err, protocol.CodeInvalid)
			return
		}
		checkErr(t, err, "")
		if !filepath.IsAbs(got) || filepath.Clean(got) != got {
			t.Fatalf("resolve(%q) with workspace %q = %q, not clean and absolute", p, ws, got)
		}
		if filepath.IsAbs(p) && got != filepath.Clean(p) {
			t.Fatalf("resolve(%q) = %q, want the absolute path unchanged", p, got)
		}
	})
}

// FuzzReadLines checks that reading a file line by line gives back every
// byte and the same line count as a whole read.
func FuzzReadLines(f *testing.F) {
	f.Add("a\nb\nc")
	f.Add("\n\n")
	f.Add("x\r\ny\r\n")
	s := files.New(files.Options{Workspace: fuzzWorkspace(f)})
	f.Fuzz(func(t *testing.T, content string) {
		if len(content) > 4096 {
			return
		}
		p := putFile(t, s, content)
		total := lines(content)
		var b strings.Builder
		for n := 1; n <= max(total, 1); n++ {
			res, err := s.Read(t.Context(), protocol.ReadRequest{Path: p, StartLine: n, EndLine: n, Encoding: "base64"})
			checkErr(t, err, "")
			if res.TotalLines != total || res.EOF != (n >= total) {
				t.Fatalf("line %d of %q: %+v", n, content, res)
			}
			b.WriteString(decodeB64(t, res.Content))
		}
		if b.String() != content {
			t.Fatalf("lines of %q join to %q", content, b.String())
		}
		_, err := s.Read(t.Context(), protocol.ReadRequest{Path: p, StartLine: max(total, 1) + 1})
		checkErr(t, err, protocol.CodeInvalid)
	})
}

// fuzzWorkspace returns a workspace for a fuzz target, on tmpfs when
// /dev/shm exists: every write fsyncs, and on a disk that alone holds
// fuzzing to a few hundred runs a second.
func fuzzWorkspace(f *testing.F) string {
	dir, err := os.MkdirTemp("/dev/shm", "sandgate-fuzz-")
	if err != nil {
		return f.TempDir()
	}
	f.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// putFile writes content to the fuzz file of s and returns its path.
func putFile(t *testing.T, s *files.Service, content string) string {
	t.Helper()
	res, err := s.Write(t.Context(), protocol.WriteRequest{Path: "fuzz.txt", Content: b64(content), Encoding: "base64"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(res.Path); errors.Is(err, os.ErrNotExist) {
		t.Fatal("write reported success but the file is missing")
	}
	return res.Path
}

// crlf and toCRLF restate the package's CRLF rules for the oracle.
func crlf(s string) bool {
	n := strings.Count(s, "\n")
	if n == 0 {
		return strings.HasSuffix(s, "\r")
	}
	return strings.Count(s, "\r\n") == n
}

func toCRLF(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", "\r\n")
}
