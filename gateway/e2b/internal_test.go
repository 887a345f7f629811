package e2b

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/gateway/e2b/envd/filesystem"
	"github.com/sandgate/sandgate/runner/protocol"
)

func TestPollerDiff(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	file := func(name string, size int64, perm uint32, mod time.Time) protocol.FileInfo {
		return protocol.FileInfo{Path: "/w/" + name, Name: name, Type: protocol.TypeFile, Size: size, Perm: perm, ModTime: mod}
	}
	dir := protocol.FileInfo{Path: "/w/x", Name: "x", Type: protocol.TypeDir, Perm: 0o755, ModTime: at}
	before := []protocol.FileInfo{file("same", 1, 0o644, at), file("grown", 1, 0o644, at), file("touched", 1, 0o644, at),
		file("chmod", 1, 0o644, at), file("gone", 1, 0o644, at), file("x", 1, 0o644, at)}
	after := []protocol.FileInfo{file("same", 1, 0o644, at), file("grown", 2, 0o644, at), file("touched", 1, 0o644, at.Add(time.Second)),
		file("chmod", 1, 0o600, at), file("new", 0, 0o644, at), dir}
	p := newPoller("/w", false, false)
	p.last = map[string]protocol.FileInfo{}
	for _, f := range before {
		p.last[f.Path] = f
	}
	now := map[string]protocol.FileInfo{}
	for _, f := range after {
		now[f.Path] = f
	}
	var got []string
	for _, ev := range p.diff("/w", now) {
		got = append(got, ev.GetType().String()+" "+ev.GetName())
	}
	want := []string{"EVENT_TYPE_CHMOD chmod", "EVENT_TYPE_WRITE grown", "EVENT_TYPE_CREATE new",
		"EVENT_TYPE_WRITE touched", "EVENT_TYPE_REMOVE x", "EVENT_TYPE_CREATE x", "EVENT_TYPE_REMOVE gone"}
	if !slices.Equal(got, want) {
		t.Errorf("diff:\n got %q\nwant %q", got, want)
	}
}

func TestEndEvent(t *testing.T) {
	t.Parallel()
	code := func(c int) *int { return &c }
	for _, tc := range []struct {
		name   string
		p      protocol.ProcessInfo
		code   int32
		exited bool
		status string
		err    string
	}{
		{"success", protocol.ProcessInfo{ExitCode: code(0)}, 0, true, "exit status 0", ""},
		{"failure", protocol.ProcessInfo{ExitCode: code(3)}, 3, true, "exit status 3", "exit status 3"},
		{"killed", protocol.ProcessInfo{ExitCode: code(-1), Signal: "SIGKILL"}, -1, false, "signal: killed", "signal: killed"},
		{"timed out", protocol.ProcessInfo{ExitCode: code(-1), Signal: "SIGKILL", Message: "timed out after 5s"}, -1, false, "signal: killed", "timed out after 5s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			end := endEvent(tc.p).GetEnd()
			if end.GetExitCode() != tc.code || end.GetExited() != tc.exited || end.GetStatus() != tc.status || end.GetError() != tc.err {
				t.Errorf("end %v, want code %d exited %v status %q error %q", end, tc.code, tc.exited, tc.status, tc.err)
			}
		})
	}
}

func TestEntryInfoMode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		f     protocol.FileInfo
		mode  uint32
		perms string
		typ   filesystem.FileType
	}{
		{protocol.FileInfo{Type: protocol.TypeFile, Perm: 0o644}, 0o644, "-rw-r--r--", filesystem.FileType_FILE_TYPE_FILE},
		{protocol.FileInfo{Type: protocol.TypeDir, Perm: 0o755}, 1<<31 | 0o755, "drwxr-xr-x", filesystem.FileType_FILE_TYPE_DIRECTORY},
		{protocol.FileInfo{Type: protocol.TypeSymlink, Perm: 0o777, Target: "t"}, 1<<27 | 0o777, "Lrwxrwxrwx", filesystem.FileType_FILE_TYPE_SYMLINK},
		{protocol.FileInfo{Type: protocol.TypeOther, Perm: 0o600}, 1<<19 | 0o600, "?rw-------", filesystem.FileType_FILE_TYPE_UNSPECIFIED},
	} {
		e := entryInfo(tc.f)
		if e.GetMode() != tc.mode || e.GetPermissions() != tc.perms || e.GetType() != tc.typ {
			t.Errorf("%s: mode %o %q type %v, want %o %q %v", tc.f.Type, e.GetMode(), e.GetPermissions(), e.GetType(), tc.mode, tc.perms, tc.typ)
		}
	}
}

func TestCheckMetadata(t *testing.T) {
	t.Parallel()
	many := map[string]string{}
	for i := range MaxMetadataKeys + 1 {
		many[fmt.Sprint("k", i)] = "v"
	}
	for _, tc := range []struct {
		name     string
		metadata map[string]string
		want     string // a part of the problem; "" for none
	}{
		{"none", nil, ""},
		{"some", map[string]string{"user": "ada", "k/é x": `v=1, "q"`}, ""},
		{"longest key and value", map[string]string{strings.Repeat("k", MaxMetadataKey): strings.Repeat("v", MaxMetadataValue)}, ""},
		{"too many keys", many, "at most 32"},
		{"empty key", map[string]string{"": "v"}, "empty key"},
		{"long key", map[string]string{strings.Repeat("k", MaxMetadataKey+1): "v"}, "at most 64 bytes"},
		{"long value", map[string]string{"k": strings.Repeat("v", MaxMetadataValue+1)}, "at most 512 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := checkMetadata(tc.metadata)
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("checkMetadata = %q, want %q", got, tc.want)
			}
		})
	}
}
