// Package kubernetes is the sandbox.Provider for a Kubernetes cluster:
// one pod per sandbox, in one namespace (Config.Namespace), made with
// client-go.
//
// # Objects
//
// A sandbox with id ID is two objects named sandgate-ID (ids are at most
// 64 lowercase letters, digits and dashes, so the name is a valid
// DNS-1123 subdomain):
//
//   - a Secret holding the runner secret (hex, key "runner"). It is the
//     sandbox's record: it is made first and deleted only by Remove, so a
//     pod deleted or evicted from outside leaves it behind and Recreate
//     can bring the sandbox back, while after Remove Recreate finds
//     nothing (ErrNotFound). The Secret owns the pod (an ownerReference):
//     deleting the Secret, by Remove or by an operator, makes the garbage
//     collector delete the pod too, and a pod can never outlive its
//     Secret for long. Its data is immutable, so kubelets do not watch
//     it; its annotations are where gateway replicas record what changes
//     after creation (sandbox.Recorder, record.go): the last use, which
//     keeps another replica from removing the sandbox as idle, the
//     egress allowlist last set, which every replica applies, and the
//     end its owner set (an E2B timeout), which every replica enforces.
//     A warm pool's sandbox is made without an owner; its claim writes
//     the claimant's labels and annotations to both objects
//     (sandbox.PoolClaims, claim.go), the Secret first and atomically.
//   - the pod (see Pod for every field and why).
//
// Both carry the same labels and annotations (labels.go; the Secret is
// the authority where a claim cut short left them apart), from which any
// gateway replica rebuilds sandbox.Info without state of its own. What a
// selector must match is a label (managed, instance, and SHA-256-based
// hashes of the owner, session and tenant, since label values are
// limited to 63 characters of a small alphabet); everything else is an
// annotation, and List checks the full values in the annotations. Get is
// a read of the pod by name; List reads the Secrets and pods of the
// instance by label selector (and, for Filter.ID, by name) and joins them
// by name, taking the last use and the allowlist from the Secret: a
// Secret without a pod is listed with State StateNoPod, so reconciliation
// finds sandboxes whose pods vanished and Secrets of creations cut short.
//
// # The runner
//
// The runner is injected, not baked in, so any image works: an init
// container from Config.RunnerImage runs `/runner install
// /sandgate/bin/runner` into an emptyDir, which the sandbox container
// mounts read-only and runs as its command: `runner --listen :7070
// --secret-file /run/sandgate/secret/runner --workspace /workspace`. The
// runner is pid 1 of the pod's container (there is no init as under
// Docker); it reaps orphans itself.
//
// The gateway dials the pod's IP on port 7070 and sends the runner
// secret first (runner/protocol.WriteSecret); the runner closes any
// connection that does not. The secret is HMAC-SHA256 of the sandbox id
// under Config.Key, which all replicas share: Dial needs no read of the
// Secret, and a pod IP that another sandbox's pod gets later never
// accepts the old sandbox's secret. Code inside the sandbox can read its
// own secret (it runs as the runner's user); that gains it nothing, as
// the secret opens only the runner it already runs under.
//
// # Network
//
// New makes sure of one NetworkPolicy per instance (NetworkPolicy)
// selecting every sandbox pod of the instance: ingress only from the
// gateway pods (Config.GatewaySelector, in Config.GatewayNamespace or
// the sandbox namespace) to port 7070, and no egress at all, DNS
// included: a sandbox reaches the network only through its runner's
// connection to the gateway (the egress proxy), so a pod can reach no
// other pod, no API server, no node address. The pods have no DNS
// resolver either (a loopback nameserver where nothing listens). Traffic
// from a node to its pods is not subject to NetworkPolicy in most network
// plugins (kube-router and Calico allow it): a gateway on a node's host
// network reaches the runners; one in a pod must match GatewaySelector.
// Pods are deleted gracefully, never forced, so a pod stays under the
// policy until its processes are dead. The plugin programs a new pod's
// policy a moment after the pod starts, so the runner is told to serve
// only once an address the policy forbids, the API server's
// (Config.IsolationProbe), stops answering it: no sandbox code, which
// runs only through the runner, runs before the policy holds.
//
// # Limits and lifetime
//
// CPU and memory limits come from sandbox.Limits; requests from Config
// (small by default, as idle sandboxes cost little). The pod's
// activeDeadlineSeconds is the time to Spec.ExpiresAt, so the kubelet
// kills a sandbox that outlives its lifetime even with no gateway left.
// Kubernetes has no per-pod pids limit in the pod spec: it is the
// kubelet's podPidsLimit, one value per node, so Limits.Pids is not
// applied per sandbox. That value must leave room for gVisor, whose pods
// hold host threads for its kernel rather than for sandbox processes
// (measured: 49 idle, 264 after a burst of 150 tasks; a runc pod holds
// 15 idle, the pause process and the runner's threads). Nor has a pod spec
// rlimits: the runner is told Docker's ulimits (--rlimits: nofile and
// fsize from the limits, no core dumps) and sets them on itself before
// anything starts, so every process of the sandbox inherits them.
// restartPolicy is Never: a dead runner is a dead sandbox, which the
// gateway replaces (Recreate). A pod that is terminating, failed,
// evicted, whose runner exited, or that is gone, is dead: Get returns
// ErrNotFound and Dial fails with ErrNotFound. A pod still starting
// (phase Pending, or running before the kubelet says so) is not.
//
// The kubelet bind-mounts /dev/termination-log, a file on the node's
// disk, writable by every container, into each container; no
// ephemeral-storage limit counts it (300 MiB written to it left the pod
// running). Nothing in a pod spec can prevent that: a node that runs
// sandboxes needs the kubelet's directory on a file system of its own.
//
// # Workspace
//
// /workspace is an emptyDir on the node's disk with sizeLimit
// Limits.WorkspaceBytes, and the pod's ephemeral-storage limit is that
// plus a little. On Kubernetes this means: writing past the size is not
// ENOSPC; the kubelet notices at its next housekeeping and evicts the
// whole pod (10 to 50 seconds after the write, under runc and gVisor, on
// the local cluster), which the gateway then sees as a dead sandbox. The workspace is not durable (Info.WorkspaceDurable
// is false): an emptyDir dies with its pod, so a sandbox replaced by
// Recreate after its runner died, or after the pod was deleted or
// evicted, starts with an empty /workspace. /tmp and /dev/shm are
// memory-backed emptyDirs whose size is the tmpfs size (a full /tmp is
// ENOSPC) and whose pages count against the memory limit, as under
// Docker.
//
// # What the gateway needs
//
// Permissions, in Config.Namespace: pods (get, list, watch, create, delete, patch),
// secrets (get, list, create, update, delete, patch), networkpolicies
// (get, create, update), and events (watch; optional: with it a missing image fails a
// Create at once rather than at the kubelet's next sync, ten seconds
// later); the API server's /version. It needs nothing cluster-wide.
package kubernetes
