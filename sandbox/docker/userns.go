package docker

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/docker/docker/api/types/system"
)

// Under user-namespace remapping (dockerd's "userns-remap"), uid 1000 in
// a container is not uid 1000 on the host: every container id is offset
// by the first id of the range the engine's remap user was given (by
// default dockremap's in /etc/subuid and /etc/subgid). What the gateway
// makes on the host for a sandbox, its socket directory and its
// workspace's root, must belong to the host's ids, or the sandbox user
// cannot create its runner's socket or write /workspace, and the
// gateway's reads of workspace files must be made as those ids too.
// The container itself is still started as Config.User: the engine
// does the mapping.

// hostIDs returns the host uid and gid of the container ids uid and gid
// on the engine info describes. The engine says that it remaps through
// a "name=userns" security option and where the range starts only
// through the name of its root directory, "<uid>.<gid>" (for example
// /var/lib/docker/100000.100000), which it makes for the remapped root.
func hostIDs(info system.Info, uid, gid int) (hostUID, hostGID int, remapped bool, err error) {
	if !remapsUsers(info.SecurityOptions) {
		return uid, gid, false, nil
	}
	base := filepath.Base(info.DockerRootDir)
	u, g, ok := strings.Cut(base, ".")
	rootUID, errU := strconv.Atoi(u)
	rootGID, errG := strconv.Atoi(g)
	if !ok || errU != nil || errG != nil || rootUID <= 0 || rootGID <= 0 {
		return 0, 0, true, fmt.Errorf("the docker engine remaps user namespaces, but its root directory %q does not end in the remapped root's <uid>.<gid>, so the host ids of the sandbox user cannot be told; run the engine without userns-remap, or with its default data root", info.DockerRootDir)
	}
	return rootUID + uid, rootGID + gid, true, nil
}

// remapsUsers reports whether the engine's security options include
// user-namespace remapping ("name=userns").
func remapsUsers(options []string) bool {
	for _, opt := range options {
		for field := range strings.SplitSeq(opt, ",") {
			if field == "name=userns" {
				return true
			}
		}
	}
	return false
}
