package files

import (
	"strings"

	"github.com/sandgate/sandgate/runner/protocol"
)

// checkEdit makes sure req asks for exactly one well-formed edit, and
// says which fields to use when it does not. Mixed requests are refused
// rather than guessed at: applying the wrong one would corrupt the file.
func checkEdit(p string, req protocol.EditRequest) error {
	var kinds []string
	if req.OldString != "" || req.NewString != "" || req.ReplaceAll {
		kinds = append(kinds, "old_string/new_string")
	}
	if req.InsertLine != 0 || req.Text != "" {
		kinds = append(kinds, "insert_line/text")
	}
	if req.StartLine != 0 || req.EndLine != 0 {
		kinds = append(kinds, "start_line/end_line")
	}
	switch len(kinds) {
	case 0:
		return protocol.Errorf(protocol.CodeInvalid,
			"edit %s: nothing to do; pass old_string and new_string to replace text, insert_line and text to insert lines, or start_line and end_line to delete lines", p)
	case 1:
	default:
		return protocol.Errorf(protocol.CodeInvalid,
			"edit %s: the request mixes %s; send one kind of edit per request", p, strings.Join(kinds, " and "))
	}
	switch kinds[0] {
	case "old_string/new_string":
		return checkReplace(p, req)
	case "insert_line/text":
		return checkInsert(p, req)
	}
	return checkDelete(p, req)
}

// checkReplace validates a replace edit.
func checkReplace(p string, req protocol.EditRequest) error {
	if req.OldString == "" {
		return protocol.Errorf(protocol.CodeInvalid,
			"edit %s: old_string is empty; pass the exact text to replace (to add lines, use insert_line and text)", p)
	}
	if req.OldString == req.NewString {
		return protocol.Errorf(protocol.CodeInvalid,
			"edit %s: old_string and new_string are the same, so nothing would change; pass the new text in new_string", p)
	}
	return nil
}

// checkInsert validates an insert edit; the upper bound of InsertLine
// depends on the file and is checked once it is read.
func checkInsert(p string, req protocol.EditRequest) error {
	if req.InsertLine < 1 {
		return protocol.Errorf(protocol.CodeInvalid,
			"edit %s: insert_line must be 1 or more; the text goes before that line", p)
	}
	if req.Text == "" {
		return protocol.Errorf(protocol.CodeInvalid,
			"edit %s: text is empty; pass the lines to insert (\"\\n\" inserts an empty line)", p)
	}
	return nil
}

// checkDelete validates a delete edit. Both ends are required: a missing
// end_line means "to the end" for reads, and guessing either meaning for
// a delete could remove lines the caller wanted kept.
func checkDelete(p string, req protocol.EditRequest) error {
	if req.StartLine < 1 || req.EndLine < req.StartLine {
		return protocol.Errorf(protocol.CodeInvalid,
			"edit %s: delete needs start_line and end_line with 1 <= start_line <= end_line (inclusive); to delete one line pass it as both",
			p)
	}
	return nil
}
