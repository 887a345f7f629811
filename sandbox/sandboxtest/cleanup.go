package sandboxtest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"golang.org/x/sys/unix"
)

// RemoveDockerInstance removes what a test gateway of instance left
// behind: every container labelled with the instance, then the disk
// workspaces mounted under varDir/workspaces, then varDir itself. A
// gateway that crashed (or a test that stopped it mid-way) leaves
// containers and mounted workspaces; the containers go first so the
// workspaces can be unmounted, and the unmount comes before the removal
// so that nothing walks into a mounted workspace.
func RemoveDockerInstance(t testing.TB, instance, varDir string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Errorf("cleanup: docker client: %v", err)
		return
	}
	defer cli.Close()
	// A gateway killed in the middle of a container create leaves the
	// engine finishing it after the first list: list again, after a
	// pause, until a pass finds nothing (at most a few).
	for pass := 0; pass < 5; pass++ {
		cs, err := cli.ContainerList(ctx, container.ListOptions{All: true,
			Filters: filters.NewArgs(filters.Arg("label", "sandgate.instance="+instance))})
		if err != nil || (len(cs) == 0 && pass > 0) {
			break
		}
		for _, c := range cs {
			_ = cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
		}
		time.Sleep(time.Second)
	}
	mnts, _ := filepath.Glob(filepath.Join(varDir, "workspaces", "*", "mnt"))
	for _, mnt := range mnts {
		err := unix.Unmount(mnt, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
		if err != nil && !errors.Is(err, unix.EINVAL) { // EINVAL: not mounted
			t.Errorf("cleanup: unmount %s: %v", mnt, err)
		}
	}
	if err := os.RemoveAll(varDir); err != nil {
		t.Errorf("cleanup: remove %s: %v", varDir, err)
	}
}
