// Package docker is the sandbox.Provider for a Docker Engine.
//
// Each sandbox is one hardened container (see ContainerConfig): non-root,
// no capabilities, read-only root, no network, size-capped tmpfs for
// /workspace and /tmp, and cgroup limits on memory, CPU and pids. The
// static runner binary is bind-mounted read-only and is the container's
// entrypoint behind Docker's init. The runner listens on a unix socket in a
// per-sandbox host directory (Config.SocketDir/<id>) that is the only
// writable host path the container sees; the gateway dials it from the
// host.
//
// The engine is the only state: every container carries labels
// (LabelManaged and the others) scoped by Config.Instance, and Get, List
// and Remove read them back, so a restarted gateway sees the same
// sandboxes.
package docker
