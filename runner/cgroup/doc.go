// Package cgroup reads the runner's own cgroup for per-call accounting.
//
// The container's cgroup is where the limits live (memory+swap, pids, CPU)
// and where the kernel counts what the sandbox used, including OOM kills.
// The runner only reads it: inside a container /sys/fs/cgroup is a
// read-only view of the container's own group, and the runner (a non-root
// user) could not change the limits even if it were writable. Both cgroup
// v1 (legacy or hybrid hosts, one hierarchy per controller) and v2 (one
// unified hierarchy) are supported; the files are read through
// github.com/containerd/cgroups/v3.
//
// Numbers are container-wide, not per process: a delta between two
// snapshots taken around a call includes whatever else ran in the sandbox
// at the same time.
package cgroup
