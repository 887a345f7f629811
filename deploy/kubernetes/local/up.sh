#!/usr/bin/env bash
# Starts a real single-node Kubernetes on this machine for the Kubernetes
# provider's test tier: etcd, kube-apiserver, controller-manager, scheduler,
# a separate containerd 2 (runc and gVisor), the kubelet, kube-router
# (NetworkPolicy only) and the workspace storage (csi-workspace and
# csi-provisioner, StorageClass sandgate-workspace), all state under
# /var/lib/sandgate-k8s and on non-default ports, so Docker and its
# containerd are never touched. Writes an admin kubeconfig to
# /var/lib/sandgate-k8s/kubeconfig. Idempotent: a healthy cluster is left
# as it is; a broken one is torn down and restarted.
# Why a hand-made cluster: no registry or release download is reachable, so
# kind, k3s and kubeadm's images are out; everything is built by build.sh.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PKI=$K8S_STATE/pki

main() {
	need_root
	ensure_packages iptables:iptables ip:iproute2 ss:iproute2 openssl:openssl curl:curl mke2fs:e2fsprogs losetup:mount
	lock "$K8S_CACHE/cluster.lock"
	local cache t0
	cache=$("$K8S_DIR/build.sh")
	BIN=$cache/bin
	CSI_BIN=$("$K8S_DIR/build-csi.sh")/bin
	if healthy; then
		log "already up"
		summary
		return
	fi
	if [ -e "$K8S_STATE" ]; then
		log "found a stopped or broken cluster in $K8S_STATE: tearing it down first"
		SANDGATE_K8S_LOCKED=1 "$K8S_DIR/down.sh"
	fi
	t0=$SECONDS
	check_ports
	mkdir -p "$K8S_STATE"
	record_baseline
	prepare_host
	make_pki
	render_configs "$cache"
	PATH=$BIN:$PATH
	start_etcd
	start_containerd "$cache"
	start_apiserver
	start_controllers
	start_kubelet
	start_kube_router
	wait_for kube-apiserver 30 "RuntimeClasses runc and gvisor" kc apply -f "$K8S_DIR/config/runtimeclasses.yaml"
	start_storage
	# The node turns Ready before the controller-manager creates the default
	# ServiceAccount, and pods cannot be created until it exists.
	wait_for kube-controller-manager 60 "ServiceAccount default/default" kc -n default get serviceaccount default
	log "up in $((SECONDS - t0)) s"
	summary
}

# healthy: every daemon runs, from the current build and with the API
# server where this script puts it, and the API server, the node and the
# default ServiceAccount are ready.
healthy() {
	[ -f "$K8S_KUBECONFIG" ] && [ "$(readlink "$K8S_STATE/bin")" = "$BIN" ] || return 1
	[ "$(readlink "$K8S_STATE/csi-bin")" = "$CSI_BIN" ] || return 1
	grep -qx "    server: https://$K8S_NODE_IP:$PORT_APISERVER" "$K8S_KUBECONFIG" || return 1
	local d
	for d in "${K8S_DAEMONS[@]}"; do pid_of "$d" >/dev/null || return 1; done
	[ "$(kc get --raw=/readyz 2>/dev/null)" = ok ] && node_ready && kc -n default get serviceaccount default >/dev/null 2>&1
}

node_ready() {
	[ "$(kc get node "$K8S_NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}

summary() {
	cat >&2 <<EOF
  kubeconfig:         $K8S_KUBECONFIG   (kubectl --kubeconfig $K8S_KUBECONFIG get nodes)
  kubectl:            $K8S_STATE/bin/kubectl
  containerd socket:  $K8S_SOCK   (load images: deploy/kubernetes/local/load-image.sh IMAGE...)
  RuntimeClasses:     runc, gvisor
  StorageClass:       $K8S_STORAGE_CLASS (driver $K8S_CSI_DRIVER; volumes in $K8S_CSI/volumes)
  logs:               $K8S_LOGS
EOF
}

check_ports() {
	local p busy
	for p in "$PORT_ETCD" "$PORT_ETCD_PEER" "$PORT_APISERVER" "$PORT_KUBELET" "$PORT_KUBELET_HEALTHZ" "$PORT_CONTROLLER_MANAGER" "$PORT_SCHEDULER" "$PORT_CSI_PROVISIONER"; do
		busy=$(ss -Hltnp "sport = :$p")
		[ -z "$busy" ] || die "TCP port $p is already in use, the local cluster needs it: $busy"
	done
	! ip link show "$K8S_BRIDGE" >/dev/null 2>&1 || die "a network interface $K8S_BRIDGE already exists; the local cluster creates its own"
}

# record_baseline: what the host looked like before up, for down.sh to
# restore: KUBE-* chains and sets someone else made, the sysctls the kubelet
# and the CNI bridge change, and host paths they create.
record_baseline() {
	local b=$K8S_STATE/baseline t p
	mkdir -p "$b"
	for t in filter nat mangle raw; do
		iptables-save -t "$t" | awk -v t="$t" '/^:KUBE-/ {print t, substr($1, 2)}'
		ip6tables-save -t "$t" | awk -v t="$t" '/^:KUBE-/ {print t, substr($1, 2)}' | sed 's/^/6 /'
	done >"$b/chains"
	"$BIN/ipset" list -n >"$b/ipsets"
	if [ ! -e /proc/sys/net/bridge/bridge-nf-call-iptables ]; then
		# Policies between pods on one bridge need bridged traffic to pass iptables.
		ensure_packages modprobe:kmod
		modprobe br_netfilter
		echo br_netfilter >"$b/modules"
	fi
	for p in "${K8S_SYSCTLS[@]}"; do echo "$p=$(sysctl -n "$p")"; done >"$b/sysctl"
	for p in "${K8S_HOST_PATHS[@]}"; do [ -e "$p" ] || echo "$p"; done >"$b/absent"
}

# prepare_host: state dirs, a shared mount for them, our cgroups, the bridge.
prepare_host() {
	mkdir -p "$K8S_LOGS/runsc" "$K8S_RUN" "$K8S_CSI" "$PKI" "$K8S_STATE/cni/net.d" "$K8S_STATE/containerd" "$K8S_STATE/kubelet/root"
	ln -sfn "$BIN" "$K8S_STATE/bin"
	ln -sfn "$CSI_BIN" "$K8S_STATE/csi-bin"
	# containerd runs in a mount namespace of its own (see start_containerd);
	# the kubelet's volume mounts under the state dir must reach it.
	mount --bind "$K8S_STATE" "$K8S_STATE"
	mount --make-rshared "$K8S_STATE"
	awk '$3 == "cgroup" {print $2}' /proc/mounts | while read -r h; do mkdir -p "$h/$K8S_CGROUP"; done
	# A new cpuset cgroup has no CPUs or memory nodes until given its parent's.
	cp /sys/fs/cgroup/cpuset/cpuset.cpus /sys/fs/cgroup/cpuset/$K8S_CGROUP/cpuset.cpus
	cp /sys/fs/cgroup/cpuset/cpuset.mems /sys/fs/cgroup/cpuset/$K8S_CGROUP/cpuset.mems
	mkdir -p "$K8S_DAEMON_CGROUP"
	# The kubelet refuses a loopback node IP: the node, the kubelet and the
	# pods' gateway use this bridge's address; traffic stays on the machine.
	ip link add "$K8S_BRIDGE" type bridge
	ip addr add "$K8S_NODE_IP/${K8S_POD_SUBNET#*/}" dev "$K8S_BRIDGE"
	ip link set "$K8S_BRIDGE" up
}

# make_pki: a throwaway CA and a certificate for each component.
make_pki() {
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
		-subj "/CN=sandgate-k8s-ca" -keyout "$PKI/ca.key" -out "$PKI/ca.crt" 2>/dev/null
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1 -out "$PKI/sa.key"
	openssl pkey -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub"
	cert apiserver kube-apiserver "" "IP:127.0.0.1,IP:${K8S_SERVICE_CIDR%.*/*}.1,IP:$K8S_NODE_IP,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
	cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters ""
	cert admin sandgate-k8s-admin system:masters ""
	cert controller-manager system:kube-controller-manager "" ""
	cert scheduler system:kube-scheduler "" ""
	cert kubelet "system:node:$K8S_NODE" system:nodes "IP:$K8S_NODE_IP,IP:127.0.0.1,DNS:$K8S_NODE"
	cert kube-router sandgate-k8s-kube-router system:masters ""
	cert csi-provisioner sandgate-k8s-csi-provisioner system:masters ""
	local n
	for n in controller-manager scheduler kubelet kube-router csi-provisioner; do kubeconfig "$n" >"$PKI/$n.kubeconfig"; done
	kubeconfig admin >"$K8S_KUBECONFIG.tmp"
}

# cert NAME CN O SANS: a key and a CA-signed certificate for client and server use.
cert() {
	local name=$1 subj="/CN=$2${3:+/O=$3}" san=$4
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "$subj" \
		-keyout "$PKI/$name.key" -out "$PKI/$name.csr" 2>/dev/null
	openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial -days 3650 \
		-out "$PKI/$name.crt" -extfile <(
			echo "basicConstraints=CA:FALSE"
			echo "keyUsage=critical,digitalSignature,keyEncipherment"
			echo "extendedKeyUsage=serverAuth,clientAuth"
			[ -z "$san" ] || echo "subjectAltName=$san"
		) 2>/dev/null
	rm "$PKI/$name.csr"
}

# kubeconfig NAME: a self-contained kubeconfig for NAME's certificate.
kubeconfig() {
	cat <<EOF
apiVersion: v1
kind: Config
clusters:
- name: sandgate-k8s
  cluster:
    server: https://$K8S_NODE_IP:$PORT_APISERVER
    certificate-authority-data: $(base64 -w0 "$PKI/ca.crt")
users:
- name: $1
  user:
    client-certificate-data: $(base64 -w0 "$PKI/$1.crt")
    client-key-data: $(base64 -w0 "$PKI/$1.key")
contexts:
- name: sandgate-k8s
  context: {cluster: sandgate-k8s, user: $1}
current-context: sandgate-k8s
EOF
}

render_configs() {
	local cache=$1
	render containerd.toml "$K8S_STATE/containerd/config.toml" "$cache"
	render runsc.toml "$K8S_STATE/containerd/runsc.toml" "$cache"
	render cni.conflist "$K8S_STATE/cni/net.d/10-sandgate-k8s.conflist" "$cache"
	render kubelet.yaml "$K8S_STATE/kubelet/config.yaml" "$cache"
	render storage.yaml "$K8S_CSI/storage.yaml" "$cache"
}

# render TEMPLATE OUT CACHE: fill a config/ template's @PLACEHOLDERS@.
render() {
	sed -e "s|@STATE@|$K8S_STATE|g" -e "s|@BIN@|$BIN|g" -e "s|@CNI_BIN@|$3/cni|g" \
		-e "s|@PAUSE_IMAGE@|$K8S_PAUSE_IMAGE|g" -e "s|@BRIDGE@|$K8S_BRIDGE|g" \
		-e "s|@POD_SUBNET@|$K8S_POD_SUBNET|g" -e "s|@NODE_IP@|$K8S_NODE_IP|g" -e "s|@CGROUP@|$K8S_CGROUP|g" \
		-e "s|@PORT_KUBELET@|$PORT_KUBELET|g" -e "s|@PORT_KUBELET_HEALTHZ@|$PORT_KUBELET_HEALTHZ|g" \
		-e "s|@CSI_DRIVER@|$K8S_CSI_DRIVER|g" -e "s|@STORAGE_CLASS@|$K8S_STORAGE_CLASS|g" \
		"$K8S_DIR/config/$1" >"$2"
	! grep -n '@[A-Z_]*@' "$2" || die "unfilled placeholder in $2"
}

# start NAME CMD...: run a daemon detached, in our cgroup, logging to logs/NAME.log.
start() {
	local name=$1
	shift
	(
		echo "$BASHPID" >"$K8S_DAEMON_CGROUP/cgroup.procs"
		exec 9>&- # the lock stays with this script
		exec setsid "$@"
	) </dev/null >>"$K8S_LOGS/$name.log" 2>&1 &
	local pid=$! deadline=$((SECONDS + 30))
	echo "$pid" >"$K8S_RUN/$name.pid"
	# pid_of counts a daemon alive only once it is in our cgroup, which
	# the child joins itself; on a loaded machine that can take a while
	# after fork, and wait_for would take the gap for an exit.
	until grep -qx "$pid" "$K8S_DAEMON_CGROUP/cgroup.procs" 2>/dev/null; do
		kill -0 "$pid" 2>/dev/null || return 0 # exited already: wait_for reports it
		[ "$SECONDS" -lt "$deadline" ] || fail "$name" "did not join $K8S_DAEMON_CGROUP within 30 s"
		sleep 0.05
	done
}

# wait_for NAME SECONDS WHAT CMD...: poll CMD until it succeeds; on timeout,
# or if daemon NAME exits first, fail with the tail of NAME's log.
wait_for() {
	local name=$1 secs=$2 what=$3 t0=$EPOCHREALTIME deadline=$((SECONDS + $2))
	shift 3
	until "$@" >/dev/null 2>&1; do
		pid_of "$name" >/dev/null || fail "$name" "exited while we waited for $what"
		[ "$SECONDS" -lt "$deadline" ] || fail "$name" "$what not ready within $secs s"
		sleep 0.2
	done
	log "$name: $what ($(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.1f", b - a}') s)"
}

fail() {
	log "error: $1: $2; last lines of $K8S_LOGS/$1.log:"
	tail -n 30 "$K8S_LOGS/$1.log" >&2
	log "the cluster is left as it is for inspection; 'make k8s-down' removes it"
	exit 1
}

https_ok() { curl -fsS --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" "$1"; }

start_etcd() {
	start etcd "$BIN/etcd" --name "$K8S_NODE" --data-dir "$K8S_STATE/etcd" \
		--listen-client-urls "http://127.0.0.1:$PORT_ETCD" --advertise-client-urls "http://127.0.0.1:$PORT_ETCD" \
		--listen-peer-urls "http://127.0.0.1:$PORT_ETCD_PEER" --initial-advertise-peer-urls "http://127.0.0.1:$PORT_ETCD_PEER" \
		--initial-cluster "$K8S_NODE=http://127.0.0.1:$PORT_ETCD_PEER" \
		--unsafe-no-fsync --quota-backend-bytes 2147483648
	wait_for etcd 30 "etcd health" curl -fsS "http://127.0.0.1:$PORT_ETCD/health"
}

# start_containerd: containerd in a mount namespace of its own, with a
# private /run: its shims put their sockets in /run/containerd/s, a path
# fixed in containerd's code, and that directory is Docker's. Its mounts
# (rootfs overlays, shm, network namespaces) stay in that namespace and
# vanish with it.
start_containerd() {
	start containerd unshare --mount --propagation slave -- \
		sh -c 'mount -t tmpfs -o mode=0755,size=64m sandgate-k8s-run /run && exec "$@"' containerd \
		"$BIN/containerd" --config "$K8S_STATE/containerd/config.toml"
	wait_for containerd 30 "containerd's socket" ctr_ version
	ctr_ images import "$1/images/pause.tar" >/dev/null || fail containerd "could not import the pause image"
}

# start_apiserver: the API server listens on the bridge address only: the
# host reaches it there as on loopback, and so do pods, which is what a
# gateway running as a pod needs (its in-cluster config names
# $K8S_NODE_IP:$PORT_APISERVER, as there is no kube-proxy for the
# kubernetes Service's address), while the outside network does not. Pods
# whose NetworkPolicy denies egress, as every sandbox's does, still cannot.
start_apiserver() {
	start kube-apiserver "$BIN/kube-apiserver" --etcd-servers="http://127.0.0.1:$PORT_ETCD" \
		--bind-address="$K8S_NODE_IP" --secure-port="$PORT_APISERVER" --advertise-address="$K8S_NODE_IP" \
		--service-cluster-ip-range="$K8S_SERVICE_CIDR" \
		--client-ca-file="$PKI/ca.crt" --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
		--kubelet-certificate-authority="$PKI/ca.crt" --kubelet-preferred-address-types=InternalIP \
		--kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" --kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
		--service-account-issuer=https://kubernetes.default.svc --service-account-key-file="$PKI/sa.pub" \
		--service-account-signing-key-file="$PKI/sa.key" --authorization-mode=Node,RBAC \
		--enable-admission-plugins=NodeRestriction --allow-privileged=true --profiling=false
	wait_for kube-apiserver 90 "/readyz" https_ok "https://$K8S_NODE_IP:$PORT_APISERVER/readyz"
	mv "$K8S_KUBECONFIG.tmp" "$K8S_KUBECONFIG"
}

start_controllers() {
	local cm=$PKI/controller-manager.kubeconfig sched=$PKI/scheduler.kubeconfig
	start kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig="$cm" \
		--authentication-kubeconfig="$cm" --authorization-kubeconfig="$cm" \
		--bind-address=127.0.0.1 --secure-port="$PORT_CONTROLLER_MANAGER" --leader-elect=false \
		--use-service-account-credentials=true --service-account-private-key-file="$PKI/sa.key" \
		--root-ca-file="$PKI/ca.crt" --cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
		--flex-volume-plugin-dir="$K8S_STATE/kubelet/volume-plugins" --profiling=false
	start kube-scheduler "$BIN/kube-scheduler" --kubeconfig="$sched" \
		--authentication-kubeconfig="$sched" --authorization-kubeconfig="$sched" \
		--bind-address=127.0.0.1 --secure-port="$PORT_SCHEDULER" --leader-elect=false --profiling=false
	# Their serving certificates are self-signed in memory: -k, on loopback.
	wait_for kube-controller-manager 60 "/healthz" curl -fsSk "https://127.0.0.1:$PORT_CONTROLLER_MANAGER/healthz"
	wait_for kube-scheduler 60 "/healthz" curl -fsSk "https://127.0.0.1:$PORT_SCHEDULER/healthz"
}

start_kubelet() {
	start kubelet "$BIN/kubelet" --config="$K8S_STATE/kubelet/config.yaml" \
		--kubeconfig="$PKI/kubelet.kubeconfig" --root-dir="$K8S_STATE/kubelet/root" --cert-dir="$K8S_STATE/kubelet/pki" \
		--hostname-override="$K8S_NODE" --node-ip="$K8S_NODE_IP"
	wait_for kubelet 60 "/healthz" curl -fsS "http://127.0.0.1:$PORT_KUBELET_HEALTHZ/healthz"
	wait_for kubelet 60 "node $K8S_NODE registered" kc get node "$K8S_NODE"
	wait_for kubelet 120 "node $K8S_NODE Ready" node_ready
}

# start_kube_router: NetworkPolicy enforcement only (iptables and ipsets),
# no routing, no service proxy, no CNI. It reads the node at start-up.
start_kube_router() {
	start kube-router "$BIN/kube-router" --kubeconfig="$PKI/kube-router.kubeconfig" \
		--run-firewall=true --run-router=false --run-service-proxy=false --run-loadbalancer=false --enable-cni=false \
		--hostname-override="$K8S_NODE" --service-cluster-ip-range="$K8S_SERVICE_CIDR" \
		--health-port=0 --metrics-port=0 --v=1
	wait_for kube-router 60 "its iptables chain KUBE-ROUTER-FORWARD" iptables -S KUBE-ROUTER-FORWARD
}

# start_storage: the workspace storage. csi-workspace serves the CSI
# controller and node services as one host process and registers with the
# kubelet through its plugins_registry; csi-provisioner (admin
# credentials, like kube-router: a host process of the cluster's own)
# turns claims of the StorageClass into volumes. The volumes live under
# $K8S_CSI/volumes and go with the state dir at k8s-down, as etcd does.
start_storage() {
	wait_for kube-apiserver 30 "CSIDriver $K8S_CSI_DRIVER, StorageClass $K8S_STORAGE_CLASS" kc apply -f "$K8S_CSI/storage.yaml"
	start csi-workspace "$CSI_BIN/csi-workspace" -driver "$K8S_CSI_DRIVER" -node "$K8S_NODE" \
		-csi-socket "$K8S_CSI/csi.sock" -root "$K8S_CSI/volumes" -registry "$K8S_STATE/kubelet/root/plugins_registry"
	wait_for csi-workspace 30 "driver registered on node $K8S_NODE" csi_registered
	start csi-provisioner "$CSI_BIN/csi-provisioner" --kubeconfig="$PKI/csi-provisioner.kubeconfig" \
		--csi-address="$K8S_CSI/csi.sock" --leader-election=false --http-endpoint="127.0.0.1:$PORT_CSI_PROVISIONER" \
		--extra-create-metadata --v=2
	wait_for csi-provisioner 30 "/metrics" curl -fsS -o /dev/null "http://127.0.0.1:$PORT_CSI_PROVISIONER/metrics"
}

# csi_registered: the kubelet lists the driver in the node's CSINode.
csi_registered() {
	kc get csinode "$K8S_NODE" -o jsonpath='{.spec.drivers[*].name}' | grep -qw "$K8S_CSI_DRIVER"
}

main "$@"
