package main

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestParseRlimits(t *testing.T) {
	got, err := parseRlimits("nofile=1024,fsize=4294967296,core=0")
	if err != nil {
		t.Fatal(err)
	}
	want := []rlimit{{"nofile", unix.RLIMIT_NOFILE, 1024}, {"fsize", unix.RLIMIT_FSIZE, 4 << 30}, {"core", unix.RLIMIT_CORE, 0}}
	if len(got) != len(want) {
		t.Fatalf("parseRlimits = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("limit %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if l, err := parseRlimits(""); err != nil || l != nil {
		t.Errorf(`parseRlimits("") = %v, %v; want none`, l, err)
	}
	for _, bad := range []string{"nofile", "nproc=10", "nofile=-1", "nofile=1k", "core=0,"} {
		if _, err := parseRlimits(bad); err == nil {
			t.Errorf("parseRlimits(%q) accepted", bad)
		}
	}
}
