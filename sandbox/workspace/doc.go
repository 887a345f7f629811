// Package workspace makes the per-sandbox /workspace on the host.
//
// A workspace lives on disk, not in RAM, and has a size the kernel
// enforces, so filling it is ENOSPC for the writer and never an OOM kill
// of the sandbox's runner. The mechanism that works on every Linux host
// we run on, including kernels built without disk quota support, is a
// sparse file formatted as ext4 and loop-mounted with discard: it costs
// nothing until written, a writer gets ENOSPC at its size, and deleting
// files punches the space back out of the host file. When loop devices
// cannot be had (not root, no /dev/loop-control, no mkfs.ext4), Open
// says why and the caller falls back to a size-capped tmpfs, whose pages
// count against the sandbox's memory limit.
//
// Layout under the root directory (0700, owned by the gateway):
//
//	ROOT/<sandbox id>/disk.ext4   the sparse image (0600)
//	ROOT/<sandbox id>/mnt/        its mount point, bind-mounted at /workspace
//
// The directory outlives the sandbox's container, so a sandbox replaced
// after its runner died keeps its files; it is removed with the sandbox.
// Removal unmounts first and never walks the sandbox's own files, so a
// symlink planted inside a workspace cannot steer it.
package workspace
