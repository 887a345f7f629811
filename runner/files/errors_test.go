package files_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"

	"github.com/sandgate/sandgate/runner/files"
	"github.com/sandgate/sandgate/runner/protocol"
)

// TestMapError covers the os errors that tests cannot easily provoke
// for real, such as a full disk or a read-only file system.
func TestMapError(t *testing.T) {
	t.Parallel()
	s := files.New(files.Options{Workspace: "/ws"})
	pathErr := func(errno syscall.Errno) error {
		return &fs.PathError{Op: "open", Path: "/p", Err: errno}
	}
	tests := []struct {
		name string
		err  error
		code protocol.Code
		msg  string
	}{
		{"not found", pathErr(syscall.ENOENT), protocol.CodeNotFound, "op /p: no such file or directory; check the path (relative paths resolve against /ws)"},
		{"access", pathErr(syscall.EACCES), protocol.CodePermission, "permission denied"},
		{"not permitted", pathErr(syscall.EPERM), protocol.CodePermission, "permission denied"},
		{"disk full", pathErr(syscall.ENOSPC), protocol.CodeNoSpace, "op /p: no space left on device; remove files"},
		{"quota", pathErr(syscall.EDQUOT), protocol.CodeNoSpace, "quota"},
		{"file too large", pathErr(syscall.EFBIG), protocol.CodeTooLarge, "file size limit"},
		{"is a directory", pathErr(syscall.EISDIR), protocol.CodeIsDir, "is a directory"},
		{"not a directory", pathErr(syscall.ENOTDIR), protocol.CodeNotDir, "not a directory"},
		{"read-only", pathErr(syscall.EROFS), protocol.CodePermission, "write under /ws"},
		{"loop", pathErr(syscall.ELOOP), protocol.CodeInvalid, "symlink loop"},
		{"name too long", pathErr(syscall.ENAMETOOLONG), protocol.CodeInvalid, "shorter name"},
		{"exists", pathErr(syscall.EEXIST), protocol.CodeExists, "already exists"},
		{"not empty", pathErr(syscall.ENOTEMPTY), protocol.CodeExists, "not empty"},
		{"cross-device", &fs.PathError{Op: "rename", Path: "/p", Err: syscall.EXDEV}, protocol.CodeUnsupported, "different file systems"},
		{"canceled", fmt.Errorf("walk: %w", context.Canceled), protocol.CodeCanceled, "canceled"},
		{"deadline", context.DeadlineExceeded, protocol.CodeCanceled, "canceled"},
		{"other errno", pathErr(syscall.EIO), protocol.CodeInternal, "op /p: input/output error"},
		{"protocol error passes through", protocol.Errorf(protocol.CodeNoMatch, "kept"), protocol.CodeNoMatch, "kept"},
		{"plain error", errors.New("boom"), protocol.CodeInternal, "op /p: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkErr(t, files.MapError(s, tt.err), tt.code, tt.msg)
		})
	}
}
