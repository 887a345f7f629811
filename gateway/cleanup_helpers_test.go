package gateway_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	dockerapi "github.com/docker/docker/client"
	"golang.org/x/sys/unix"

	"github.com/sandgate/sandgate/sandbox/docker"
)

// removeVarDir removes a test gateway's var dir after its containers.
// A gateway that crashed (or a test that stopped it mid-way) leaves
// containers and mounted workspaces behind; the containers go first so
// the workspaces can be unmounted, and the unmount is lazy so a removal
// never walks into a mounted workspace.
func removeVarDir(t testing.TB, instance, varDir string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cli, err := dockerapi.NewClientWithOpts(dockerapi.FromEnv, dockerapi.WithAPIVersionNegotiation())
	if err != nil {
		t.Errorf("cleanup: docker client: %v", err)
		return
	}
	defer cli.Close()
	cs, err := cli.ContainerList(ctx, container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", docker.LabelInstance+"="+instance))})
	if err == nil {
		for _, c := range cs {
			_ = cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
		}
	}
	mnts, _ := filepath.Glob(filepath.Join(varDir, "workspaces", "*", "mnt"))
	for _, mnt := range mnts {
		if err := unix.Unmount(mnt, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW); err != nil && err != unix.EINVAL {
			t.Errorf("cleanup: unmount %s: %v", mnt, err)
		}
	}
	os.RemoveAll(varDir)
}
