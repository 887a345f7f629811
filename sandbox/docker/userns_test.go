package docker

import (
	"strings"
	"testing"

	"github.com/docker/docker/api/types/system"
)

func TestHostIDs(t *testing.T) {
	seccomp := "name=seccomp,profile=default"
	for _, tt := range []struct {
		name             string
		info             system.Info
		wantUID, wantGID int
		remapped         bool
		err              string
	}{
		{"no remapping", system.Info{SecurityOptions: []string{seccomp}, DockerRootDir: "/var/lib/docker"}, 1000, 1001, false, ""},
		{"default remap range", system.Info{SecurityOptions: []string{seccomp, "name=userns"}, DockerRootDir: "/var/lib/docker/100000.100000"}, 101000, 101001, true, ""},
		{"uid and gid ranges differ", system.Info{SecurityOptions: []string{"name=userns"}, DockerRootDir: "/srv/docker/231072.296608"}, 232072, 297609, true, ""},
		{"a root dir that names no range", system.Info{SecurityOptions: []string{"name=userns"}, DockerRootDir: "/var/lib/docker"}, 0, 0, true, "does not end in the remapped root's <uid>.<gid>"},
		{"a range of root", system.Info{SecurityOptions: []string{"name=userns"}, DockerRootDir: "/var/lib/docker/0.0"}, 0, 0, true, "does not end"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			uid, gid, remapped, err := hostIDs(tt.info, 1000, 1001)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil || uid != tt.wantUID || gid != tt.wantGID || remapped != tt.remapped {
				t.Fatalf("hostIDs = %d, %d, %v, %v; want %d, %d, %v", uid, gid, remapped, err, tt.wantUID, tt.wantGID, tt.remapped)
			}
		})
	}
}
