package sandbox

import "fmt"

// Memory that files in RAM may not take from a sandbox. /tmp and
// /dev/shm are tmpfs, and tmpfs pages are charged to the sandbox's memory
// cgroup: if they could fill the whole limit, the next allocation by the
// runner would be an OOM kill, and the sandbox would die of its own
// files. So the tmpfs sizes plus RunnerHeadroomBytes must fit in
// MemoryBytes.
const (
	// ShmBytes is the size of every sandbox's /dev/shm (Python
	// multiprocessing, Chromium).
	ShmBytes = 64 << 20
	// RunnerHeadroomBytes is kept free of tmpfs files for the runner
	// (about 15 MiB resident) and the processes a call starts.
	RunnerHeadroomBytes = 128 << 20
	// MinTmpfsWorkspaceBytes is the smallest workspace the tmpfs fallback
	// will make; less is refused as useless.
	MinTmpfsWorkspaceBytes = 16 << 20
)

// MemoryError says that files in RAM could take memory the runner needs.
type MemoryError struct {
	Tmp, Shm, Workspace, Headroom, Memory int64
}

func (e *MemoryError) Error() string {
	if e.Workspace > 0 {
		return fmt.Sprintf("/tmp (%s) + /dev/shm (%s) + a tmpfs /workspace of at least %s + runner headroom (%s) = %s exceed the memory limit (%s)",
			MiB(e.Tmp), MiB(e.Shm), MiB(e.Workspace), MiB(e.Headroom), MiB(e.Tmp+e.Shm+e.Workspace+e.Headroom), MiB(e.Memory))
	}
	return fmt.Sprintf("/tmp (%s) + /dev/shm (%s) + runner headroom (%s) = %s exceed the memory limit (%s)",
		MiB(e.Tmp), MiB(e.Shm), MiB(e.Headroom), MiB(e.Tmp+e.Shm+e.Headroom), MiB(e.Memory))
}

// CheckMemory reports a *MemoryError when l's tmpfs mounts and the runner
// headroom do not fit in its memory limit. With tmpfsWorkspace, the
// workspace is a tmpfs too and must get at least MinTmpfsWorkspaceBytes.
func (l Limits) CheckMemory(tmpfsWorkspace bool) error {
	e := &MemoryError{Tmp: l.TmpBytes, Shm: ShmBytes, Headroom: RunnerHeadroomBytes, Memory: l.MemoryBytes}
	if tmpfsWorkspace {
		e.Workspace = MinTmpfsWorkspaceBytes
	}
	if e.Tmp+e.Shm+e.Workspace+e.Headroom > e.Memory {
		return e
	}
	return nil
}

// TmpfsWorkspaceBytes is the size of a tmpfs /workspace under l: the
// configured size, cut down to what fits beside /tmp, /dev/shm and the
// runner headroom. Only the fallback uses it; a disk workspace is
// WorkspaceBytes.
func (l Limits) TmpfsWorkspaceBytes() int64 {
	return max(0, min(l.WorkspaceBytes, l.MemoryBytes-l.TmpBytes-ShmBytes-RunnerHeadroomBytes))
}

// MiB formats a byte count for messages: "512 MiB", "4 GiB", "1.5 GiB".
func MiB(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	default:
		return fmt.Sprintf("%d MiB", n>>20)
	}
}
