package runner

import (
	"context"
	"os"

	"golang.org/x/sys/unix"

	"github.com/sandgate/sandgate/runner/cgroup"
	"github.com/sandgate/sandgate/runner/process"
	"github.com/sandgate/sandgate/runner/protocol"
)

// Describe returns the info operation's implementation: who the runner is
// and, when the cgroup is readable, what the sandbox uses right now.
func Describe(workspace string, acct *cgroup.Accounting, pm *process.Manager) func(context.Context) protocol.Info {
	hostname, _ := os.Hostname()
	return func(context.Context) protocol.Info {
		info := protocol.Info{Version: protocol.Version, Pid: os.Getpid(), UID: os.Getuid(), GID: os.Getgid(), Hostname: hostname, Workspace: workspace}
		for _, p := range pm.List().Processes {
			if p.Running {
				info.ProcessesAlive++
			}
		}
		s := acct.Snapshot() // a nil Accounting reads as empty
		info.CgroupVersion = s.Version
		info.MemoryLimit, info.MemoryUsage, info.MemoryCache = s.MemoryLimit, s.MemoryUsage, s.MemoryCache
		info.CPUUsageMs = s.CPUUsageNs / 1e6
		info.PidsCurrent, info.PidsLimit, info.OOMKills = s.PidsCurrent, s.PidsLimit, s.OOMKills
		info.WorkspaceSizeBytes, info.WorkspaceUsedBytes = diskUsage(workspace)
		return info
	}
}

// diskUsage returns the size and used bytes of the file system at path,
// or zeros when it cannot be read.
func diskUsage(path string) (size, used int64) {
	var st unix.Statfs_t
	if unix.Statfs(path, &st) != nil {
		return 0, 0
	}
	bs := int64(st.Bsize)
	return int64(st.Blocks) * bs, int64(st.Blocks-st.Bfree) * bs
}
