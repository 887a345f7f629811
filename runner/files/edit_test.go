package files_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/runner/files"
	"github.com/sandgate/sandgate/runner/protocol"
)

func TestEdit(t *testing.T) {
	t.Parallel()
	const abc = "a\nb\nc\n"
	tests := []struct {
		name    string
		content string
		req     protocol.EditRequest // Path defaults to "f"
		want    string               // content after the edit
		res     protocol.EditResult  // Path, TotalLines and Bytes are filled in
		code    protocol.Code
		msg     []string
	}{
		// replace
		{name: "replace", content: abc, req: protocol.EditRequest{OldString: "b", NewString: "B"},
			want: "a\nB\nc\n", res: protocol.EditResult{Replacements: 1}},
		{name: "replace with nothing", content: abc, req: protocol.EditRequest{OldString: "b\n"},
			want: "a\nc\n", res: protocol.EditResult{Replacements: 1, LinesRemoved: 1}},
		{name: "replace adds lines", content: abc, req: protocol.EditRequest{OldString: "b\n", NewString: "b\nx\ny\n"},
			want: "a\nb\nx\ny\nc\n", res: protocol.EditResult{Replacements: 1, LinesAdded: 2}},
		{name: "replace_all", content: "x x x", req: protocol.EditRequest{OldString: "x", NewString: "yy", ReplaceAll: true},
			want: "yy yy yy", res: protocol.EditResult{Replacements: 3}},
		{name: "replace_all of a unique string", content: abc, req: protocol.EditRequest{OldString: "c", NewString: "C", ReplaceAll: true},
			want: "a\nb\nC\n", res: protocol.EditResult{Replacements: 1}},
		{name: "not unique", content: "x x x", req: protocol.EditRequest{OldString: "x", NewString: "y"},
			code: protocol.CodeNotUnique, msg: []string{"3 times", "replace_all", "surrounding"}},
		{name: "no match", content: abc, req: protocol.EditRequest{OldString: "  b", NewString: "y"},
			code: protocol.CodeNoMatch, msg: []string{"old_string not found", "including whitespace"}},
		{name: "same strings", content: abc, req: protocol.EditRequest{OldString: "b", NewString: "b"},
			code: protocol.CodeInvalid, msg: []string{"the same"}},
		{name: "new_string without old_string", content: abc, req: protocol.EditRequest{NewString: "b"},
			code: protocol.CodeInvalid, msg: []string{"old_string is empty"}},
		{name: "CRLF file, LF old and new", content: "a\r\nb\r\nc\r\n", req: protocol.EditRequest{OldString: "a\nb", NewString: "x\ny\nz"},
			want: "x\r\ny\r\nz\r\nc\r\n", res: protocol.EditResult{Replacements: 1, LinesAdded: 1}},
		{name: "CRLF file, one-line old, LF new", content: "a\r\nb\r\n", req: protocol.EditRequest{OldString: "b", NewString: "b\nc"},
			want: "a\r\nb\r\nc\r\n", res: protocol.EditResult{Replacements: 1, LinesAdded: 1}},
		{name: "mixed endings are left alone", content: "a\r\nb\n", req: protocol.EditRequest{OldString: "b", NewString: "b\nc"},
			want: "a\r\nb\nc\n", res: protocol.EditResult{Replacements: 1, LinesAdded: 1}},

		// insert
		{name: "insert first", content: abc, req: protocol.EditRequest{InsertLine: 1, Text: "x"},
			want: "x\na\nb\nc\n", res: protocol.EditResult{LinesAdded: 1}},
		{name: "insert middle, several lines", content: abc, req: protocol.EditRequest{InsertLine: 2, Text: "x\ny\n"},
			want: "a\nx\ny\nb\nc\n", res: protocol.EditResult{LinesAdded: 2}},
		{name: "append", content: abc, req: protocol.EditRequest{InsertLine: 4, Text: "d"},
			want: "a\nb\nc\nd\n", res: protocol.EditResult{LinesAdded: 1}},
		{name: "append keeps a missing final newline", content: "a\nb", req: protocol.EditRequest{InsertLine: 3, Text: "c\n"},
			want: "a\nb\nc", res: protocol.EditResult{LinesAdded: 1}},
		{name: "insert into an empty file", content: "", req: protocol.EditRequest{InsertLine: 1, Text: "x"},
			want: "x\n", res: protocol.EditResult{LinesAdded: 1}},
		{name: "insert an empty line", content: abc, req: protocol.EditRequest{InsertLine: 2, Text: "\n"},
			want: "a\n\nb\nc\n", res: protocol.EditResult{LinesAdded: 1}},
		{name: "insert into CRLF", content: "a\r\nb", req: protocol.EditRequest{InsertLine: 2, Text: "x\ny"},
			want: "a\r\nx\r\ny\r\nb", res: protocol.EditResult{LinesAdded: 2}},
		{name: "append to CRLF without final newline", content: "a\r\nb", req: protocol.EditRequest{InsertLine: 3, Text: "c"},
			want: "a\r\nb\r\nc", res: protocol.EditResult{LinesAdded: 1}},
		{name: "insert past the end", content: abc, req: protocol.EditRequest{InsertLine: 5, Text: "x"},
			code: protocol.CodeInvalid, msg: []string{"insert_line 5", "3 lines", "1 to 4"}},
		{name: "insert without a line", content: abc, req: protocol.EditRequest{Text: "x"},
			code: protocol.CodeInvalid, msg: []string{"insert_line must be 1 or more"}},
		{name: "insert without text", content: abc, req: protocol.EditRequest{InsertLine: 1},
			code: protocol.CodeInvalid, msg: []string{"text is empty"}},

		// delete
		{name: "delete one line", content: abc, req: protocol.EditRequest{StartLine: 2, EndLine: 2},
			want: "a\nc\n", res: protocol.EditResult{LinesRemoved: 1}},
		{name: "delete a range", content: abc, req: protocol.EditRequest{StartLine: 1, EndLine: 2},
			want: "c\n", res: protocol.EditResult{LinesRemoved: 2}},
		{name: "delete everything", content: abc, req: protocol.EditRequest{StartLine: 1, EndLine: 3},
			want: "", res: protocol.EditResult{LinesRemoved: 3}},
		{name: "delete the last line keeps a missing final newline", content: "a\nb\nc", req: protocol.EditRequest{StartLine: 3, EndLine: 3},
			want: "a\nb", res: protocol.EditResult{LinesRemoved: 1}},
		{name: "delete the last CRLF line", content: "a\r\nb\r\nc", req: protocol.EditRequest{StartLine: 2, EndLine: 3},
			want: "a", res: protocol.EditResult{LinesRemoved: 2}},
		{name: "delete past the end", content: abc, req: protocol.EditRequest{StartLine: 2, EndLine: 4},
			code: protocol.CodeInvalid, msg: []string{"out of range", "3 lines"}},
		{name: "delete without end_line", content: abc, req: protocol.EditRequest{StartLine: 2},
			code: protocol.CodeInvalid, msg: []string{"start_line and end_line"}},
		{name: "delete backwards", content: abc, req: protocol.EditRequest{StartLine: 3, EndLine: 2},
			code: protocol.CodeInvalid},

		// request shape
		{name: "nothing to do", content: abc, req: protocol.EditRequest{},
			code: protocol.CodeInvalid, msg: []string{"old_string and new_string", "insert_line and text", "start_line and end_line"}},
		{name: "two kinds", content: abc, req: protocol.EditRequest{OldString: "a", NewString: "b", StartLine: 1, EndLine: 1},
			code: protocol.CodeInvalid, msg: []string{"mixes old_string/new_string and start_line/end_line"}},
		{name: "missing file", req: protocol.EditRequest{Path: "nope", OldString: "a", NewString: "b"},
			code: protocol.CodeNotFound, msg: []string{"no such file"}},
		{name: "directory", req: protocol.EditRequest{Path: "d", OldString: "a", NewString: "b"},
			code: protocol.CodeIsDir},
		{name: "result above the cap", content: "xx", req: protocol.EditRequest{OldString: "x", NewString: strings.Repeat("y", 40), ReplaceAll: true},
			code: protocol.CodeTooLarge, msg: []string{"80 bytes", "64 bytes edit cap"}},
		{name: "file above the cap", content: strings.Repeat("x", 65), req: protocol.EditRequest{OldString: "x", NewString: "y", ReplaceAll: true},
			code: protocol.CodeTooLarge, msg: []string{"sed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, ws := newService(t, files.Options{MaxWriteBytes: 64})
			writeFiles(t, ws, map[string]string{"d/": ""})
			f := filepath.Join(ws, "f")
			writeMode(t, f, tt.content, 0o640)
			if tt.req.Path == "" {
				tt.req.Path = "f"
			}
			got, err := s.Edit(t.Context(), tt.req)
			checkErr(t, err, tt.code, tt.msg...)
			if left := tempFiles(t, ws); len(left) > 0 {
				t.Errorf("temporary files left behind: %v", left)
			}
			if tt.code != "" {
				checkFile(t, f, tt.content, 0o640) // a failed edit changes nothing
				return
			}
			tt.res.Path, tt.res.TotalLines, tt.res.Bytes = f, lines(tt.want), int64(len(tt.want))
			if got != tt.res {
				t.Errorf("Edit result\n got %+v\nwant %+v", got, tt.res)
			}
			checkFile(t, f, tt.want, 0o640)
		})
	}
}

func TestEditThroughSymlink(t *testing.T) {
	t.Parallel()
	s, ws := newService(t, files.Options{})
	writeFiles(t, ws, map[string]string{"real.txt": "old\n"})
	symlink(t, "real.txt", filepath.Join(ws, "link"))
	if _, err := s.Edit(t.Context(), protocol.EditRequest{Path: "link", OldString: "old", NewString: "new"}); err != nil {
		t.Fatal(err)
	}
	checkFile(t, filepath.Join(ws, "real.txt"), "new\n", 0o644)
	if target := readLink(t, filepath.Join(ws, "link")); target != "real.txt" {
		t.Errorf("link now points at %q", target)
	}
}

// lines counts lines the way the package does: a final line without a
// newline counts.
func lines(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}
