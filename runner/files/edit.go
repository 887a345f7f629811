package files

import (
	"context"
	"io"
	"strings"

	"github.com/sandgate/sandgate/runner/protocol"
)

// Edit applies one edit to a file — replace text, insert lines or delete
// lines, as documented on protocol.EditRequest — and writes the result
// atomically with the file's mode kept. Edits go through a symlink to its
// target, like Write.
func (s *Service) Edit(ctx context.Context, req protocol.EditRequest) (protocol.EditResult, error) {
	p, err := s.resolve("edit", req.Path)
	if err != nil {
		return protocol.EditResult{}, err
	}
	if err := checkEdit(p, req); err != nil {
		return protocol.EditResult{}, err
	}
	if ctx.Err() != nil {
		return protocol.EditResult{}, canceled("edit", p)
	}
	target, existing, err := s.writeTarget("edit", p)
	if err != nil {
		return protocol.EditResult{}, err
	}
	if existing == nil {
		return protocol.EditResult{}, protocol.Errorf(protocol.CodeNotFound,
			"edit %s: no such file; check the path (relative paths resolve against %s), or create the file with a write",
			p, s.opts.Workspace)
	}
	content, err := s.loadForEdit(p, target)
	if err != nil {
		return protocol.EditResult{}, err
	}
	out, res, err := s.applyEdit(p, content, req)
	if err != nil {
		return protocol.EditResult{}, err
	}
	if err := replaceFile(target, []byte(out), permMode(unixPerm(existing.Mode())), true); err != nil {
		return protocol.EditResult{}, s.fsError("edit", p, err)
	}
	res.Path, res.TotalLines, res.Bytes = p, lineCount(out), int64(len(out))
	return res, nil
}

// applyEdit computes the edited content and the line counts of the edit.
// For a replace, LinesAdded and LinesRemoved are the net change in lines.
func (s *Service) applyEdit(p, content string, req protocol.EditRequest) (string, protocol.EditResult, error) {
	var res protocol.EditResult
	total := lineCount(content)
	switch {
	case req.OldString != "":
		out, n, err := s.replace(p, content, req)
		if err != nil {
			return "", res, err
		}
		res.Replacements = n
		delta := lineCount(out) - total
		res.LinesAdded, res.LinesRemoved = max(delta, 0), max(-delta, 0)
		return out, res, nil
	case req.InsertLine > 0:
		if req.InsertLine > total+1 {
			return "", res, protocol.Errorf(protocol.CodeInvalid,
				"edit %s: insert_line %d is out of range; the file has %d lines, so use 1 to %d (%d appends)",
				p, req.InsertLine, total, total+1, total+1)
		}
		out, added := insertText(content, req.InsertLine, req.Text)
		res.LinesAdded = added
		return s.checkEditSize(p, out, res)
	default:
		if req.EndLine > total {
			return "", res, protocol.Errorf(protocol.CodeInvalid,
				"edit %s: lines %d to %d are out of range; the file has %d lines", p, req.StartLine, req.EndLine, total)
		}
		res.LinesRemoved = req.EndLine - req.StartLine + 1
		return deleteLines(content, req.StartLine, req.EndLine), res, nil
	}
}

// replace substitutes req.NewString for req.OldString. In a CRLF file both
// strings get CRLF endings first, so an agent that sends "\n" still
// matches and the file stays CRLF. The result size is checked before it
// is built: replace_all can multiply a file.
func (s *Service) replace(p, content string, req protocol.EditRequest) (string, int, error) {
	old, repl := endingsLike(content, req.OldString), endingsLike(content, req.NewString)
	n := strings.Count(content, old)
	switch {
	case n == 0:
		return "", 0, protocol.Errorf(protocol.CodeNoMatch,
			"edit %s: old_string not found in the file; read the file and copy the exact text, including whitespace", p)
	case n > 1 && !req.ReplaceAll:
		return "", 0, protocol.Errorf(protocol.CodeNotUnique,
			"edit %s: old_string occurs %d times; include more surrounding lines to make it unique, or pass replace_all to replace every occurrence",
			p, n)
	}
	if size := int64(len(content)) + int64(n)*int64(len(repl)-len(old)); size > s.opts.MaxWriteBytes {
		return "", 0, tooLarge("edit", p, "the result", size, s.opts.MaxWriteBytes, "edit",
			"replace fewer occurrences or shorter text")
	}
	return strings.ReplaceAll(content, old, repl), n, nil
}

// checkEditSize refuses an edit whose result is above the write cap.
func (s *Service) checkEditSize(p, out string, res protocol.EditResult) (string, protocol.EditResult, error) {
	if int64(len(out)) > s.opts.MaxWriteBytes {
		return "", res, tooLarge("edit", p, "the result", int64(len(out)), s.opts.MaxWriteBytes, "edit",
			"insert less text")
	}
	return out, res, nil
}

// loadForEdit reads the whole file at target (named p to the user); it
// must fit the write cap, since the edited file is written back whole.
func (s *Service) loadForEdit(p, target string) (string, error) {
	f, fi, err := s.openFile("edit", p, target)
	if err != nil {
		return "", err
	}
	defer f.Close()
	limit := s.opts.MaxWriteBytes
	hint := "edit it with a shell command such as sed"
	if fi.Size() > limit {
		return "", tooLarge("edit", p, "file", fi.Size(), limit, "edit", hint)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return "", s.fsError("edit", p, err)
	}
	if int64(len(data)) > limit {
		return "", tooLarge("edit", p, "file", int64(len(data)), limit, "edit", hint)
	}
	return string(data), nil
}
