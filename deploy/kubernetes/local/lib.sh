# shellcheck shell=bash disable=SC2034 # the settings are for the scripts that source this
# Settings and helpers shared by the local single-node Kubernetes scripts
# (sourced, not run). Why: build, up, down and load-image must agree on
# every path, port and name, and fail in the same clear way.

# A failing $(...) fails the command it feeds.
shopt -s inherit_errexit
# Root's tools, whatever PATH make or sudo passed on.
PATH=$PATH:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

K8S_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# Everything the running cluster owns; down.sh removes it.
K8S_STATE=/var/lib/sandgate-k8s
K8S_KUBECONFIG=$K8S_STATE/kubeconfig
K8S_SOCK=$K8S_STATE/containerd/containerd.sock
K8S_LOGS=$K8S_STATE/logs
K8S_RUN=$K8S_STATE/run
# Build output, kept across up/down (CI may point it at a cached volume).
K8S_CACHE=${SANDGATE_K8S_CACHE:-/var/cache/sandgate-k8s}

K8S_NODE=sandgate-k8s
K8S_BRIDGE=sgk8s0
K8S_NODE_IP=10.244.0.1
K8S_POD_SUBNET=10.244.0.0/24
K8S_SERVICE_CIDR=10.96.0.0/16
K8S_PAUSE_IMAGE=sandgate.local/pause:3.10
# cgroup (in every v1 hierarchy) that holds the pods; the pids hierarchy also
# holds every daemon we start, so down.sh can find each process we own.
K8S_CGROUP=sandgate-k8s
K8S_DAEMON_CGROUP=/sys/fs/cgroup/pids/$K8S_CGROUP/daemons

PORT_ETCD=23791
PORT_ETCD_PEER=23801
PORT_APISERVER=16443
PORT_KUBELET=20250
PORT_KUBELET_HEALTHZ=20248
PORT_CONTROLLER_MANAGER=20257
PORT_SCHEDULER=20259
# csi-provisioner's metrics, on loopback.
PORT_CSI_PROVISIONER=20261

# Workspace storage: csi-workspace (build-csi.sh) and its StorageClass.
K8S_CSI_DRIVER=workspace.csi.sandgate.dev
K8S_STORAGE_CLASS=sandgate-workspace
K8S_CSI=$K8S_STATE/csi

# Sysctls the kubelet (its "kernel tunables") and the CNI bridge plugin set;
# up.sh records them and down.sh puts them back.
K8S_SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys
	kernel.keys.root_maxbytes net.ipv4.ip_forward net.bridge.bridge-nf-call-iptables net.bridge.bridge-nf-call-ip6tables)
# Host paths the kubelet and the CNI library create whatever they are told
# (the kubelet's device-plugin socket, container log links, CNI results).
K8S_HOST_PATHS=(/var/lib/kubelet /var/log/containers /var/lib/cni)

# Daemons in start order; down.sh stops them in reverse.
K8S_DAEMONS=(etcd containerd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-router csi-workspace csi-provisioner)

log() { printf '%s k8s: %s\n' "$(date +%T)" "$*" >&2; }

die() {
	log "error: $*"
	exit 1
}

need_root() {
	if [ "$(id -u)" != 0 ]; then
		echo "$(basename "$0"): must run as root: it manages containerd, the kubelet, cgroups, mounts and iptables" >&2
		exit 1
	fi
}

# ensure_packages NEED:PACKAGE...: apt-get install each PACKAGE whose NEED
# (a command on PATH, or an absolute file path) is missing.
ensure_packages() {
	local want=() pair need
	for pair in "$@"; do
		need=${pair%%:*}
		if [[ $need == /* ]]; then [ -e "$need" ] && continue; else command -v "$need" >/dev/null && continue; fi
		want+=("${pair#*:}")
	done
	[ ${#want[@]} = 0 ] && return
	log "installing missing Debian packages: ${want[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y --no-install-recommends "${want[@]}" >&2 ||
		{ apt-get update >&2 && apt-get install -y --no-install-recommends "${want[@]}" >&2; } ||
		die "apt-get install ${want[*]} failed"
}

# find_go prints the Go toolchain to use: go on PATH, else /usr/local/go;
# gVisor needs Go 1.26 or later.
find_go() {
	local go
	go=$(command -v go || echo /usr/local/go/bin/go)
	case $("$go" env GOVERSION 2>/dev/null) in
	go1.2[6-9]* | go1.[3-9][0-9]*) echo "$go" ;;
	*) die "need Go 1.26 or later on PATH or at /usr/local/go/bin/go (found: $("$go" version 2>&1))" ;;
	esac
}

# lock FILE: serialise with other runs of these scripts (fd 9).
lock() {
	mkdir -p "$(dirname "$1")"
	exec 9>>"$1"
	flock -w 1800 9 || die "could not lock $1 within 30 min (another up/down/build running?)"
}

# kc ARGS: kubectl as the cluster admin.
kc() { "$K8S_STATE/bin/kubectl" --kubeconfig "$K8S_KUBECONFIG" --cache-dir "$K8S_STATE/kubectl-cache" "$@"; }

# ctr_ ARGS: ctr against our containerd, in the namespace the CRI uses.
ctr_() { "$K8S_STATE/bin/ctr" --address "$K8S_SOCK" --namespace k8s.io "$@"; }

# pid_of NAME: the pid of a daemon we started, if it is still running.
pid_of() {
	local pid
	pid=$(cat "$K8S_RUN/$1.pid" 2>/dev/null) || return 1
	grep -qx "$pid" "$K8S_DAEMON_CGROUP/cgroup.procs" 2>/dev/null && echo "$pid"
}
