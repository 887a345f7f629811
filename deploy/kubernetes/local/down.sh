#!/usr/bin/env bash
# Tears down everything up.sh started and leaves no trace: stops every
# process it started (found through its cgroup, so shims and sandboxes too),
# unmounts what the kubelet mounted, removes the cgroups, the bridge, the
# iptables chains and ipsets kube-router and the kubelet made, restores the
# sysctls they changed and removes /var/lib/sandgate-k8s. The build cache
# stays. Why this care: the machine runs Docker, CI and benchmarks, and this
# must never touch Docker's engine, containerd, images or iptables chains.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BASELINE=$K8S_STATE/baseline

main() {
	need_root
	[ "${SANDGATE_K8S_LOCKED:-}" = 1 ] || lock "$K8S_CACHE/cluster.lock"
	local t0=$SECONDS
	delete_pods
	stop_daemons
	kill_the_rest
	unmount_state
	detach_loops
	remove_cgroups
	remove_network
	remove_chains iptables
	remove_chains ip6tables
	remove_ipsets
	restore_host
	[ -z "$(state_mounts)" ] || die "mounts remain under $K8S_STATE; not removing it: $(state_mounts)"
	rm -rf --one-file-system "$K8S_STATE"
	log "down in $((SECONDS - t0)) s"
}

# delete_pods: let the kubelet stop each pod cleanly (its network too) while
# the cluster still runs; whatever is left after 30 s is killed below.
delete_pods() {
	pid_of kubelet >/dev/null && [ "$(kc get --raw=/readyz 2>/dev/null)" = ok ] || return 0
	log "deleting pods"
	kc delete pods --all --all-namespaces --grace-period=1 --timeout=30s >/dev/null 2>&1 ||
		log "pods not gone within 30 s; killing them"
}

stop_daemons() {
	local i pid
	for ((i = ${#K8S_DAEMONS[@]} - 1; i >= 0; i--)); do
		pid=$(pid_of "${K8S_DAEMONS[i]}") || continue
		log "stopping ${K8S_DAEMONS[i]}"
		kill -TERM "$pid"
		wait_gone "$pid" 10 || kill -KILL "$pid" 2>/dev/null || true
	done
}

# wait_gone PID SECONDS: wait for PID to exit.
wait_gone() {
	local deadline=$((SECONDS + $2))
	while [ -e "/proc/$1" ] && ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; do
		[ "$SECONDS" -lt "$deadline" ] || return 1
		sleep 0.1
	done
}

# cgroup_procs: every process in our pids cgroup tree: the daemons, the
# shims and runsc sandboxes they spawned, and the pods' processes.
cgroup_procs() {
	[ -d "/sys/fs/cgroup/pids/$K8S_CGROUP" ] || return 0
	find "/sys/fs/cgroup/pids/$K8S_CGROUP" -name cgroup.procs -exec cat {} +
}

kill_the_rest() {
	local procs deadline=$((SECONDS + 15))
	while procs=$(cgroup_procs) && [ -n "$procs" ]; do
		[ "$SECONDS" -lt "$deadline" ] || die "processes in cgroup $K8S_CGROUP survive SIGKILL: ${procs//$'\n'/ }"
		# shellcheck disable=SC2086 # one pid a word
		kill -KILL $procs 2>/dev/null || true
		sleep 0.2
	done
}

# state_mounts: mount points under the state dir, deepest first.
state_mounts() { awk -v s="$K8S_STATE" '$5 == s || index($5, s "/") == 1 {print $5}' /proc/self/mountinfo | sort -r; }

unmount_state() {
	local m
	for m in $(state_mounts); do umount "$m" 2>/dev/null || umount -l "$m"; done
}

# detach_loops: loop devices still bound to a file of ours. csi-workspace's
# volumes set autoclear, so unmounting them frees their devices; this is
# for one left behind (a mount that failed half-way, a killed driver).
detach_loops() {
	local dev
	for dev in $(losetup -l -n -O NAME,BACK-FILE 2>/dev/null | awk -v s="$K8S_STATE/" 'index($2, s) == 1 {print $1}'); do
		log "detaching $dev"
		losetup -d "$dev" || log "warning: could not detach $dev"
	done
}

remove_cgroups() {
	local deadline=$((SECONDS + 10)) left
	while left=$(find /sys/fs/cgroup/*/"$K8S_CGROUP" -depth -type d 2>/dev/null) && [ -n "$left" ]; do
		# shellcheck disable=SC2086 # one path a word
		rmdir $left 2>/dev/null || true
		[ "$SECONDS" -lt "$deadline" ] || die "cgroups remain: ${left//$'\n'/ }"
		sleep 0.2
	done
}

# remove_network: the bridge, once the pods' veths have gone with their
# network namespaces.
remove_network() {
	ip link show "$K8S_BRIDGE" >/dev/null 2>&1 || return 0
	local deadline=$((SECONDS + 10)) veth
	while [ -n "$(ip -o link show master "$K8S_BRIDGE")" ] && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.2; done
	for veth in $(ip -o link show master "$K8S_BRIDGE" | awk -F': ' '{print $2}'); do ip link del "${veth%@*}"; done
	ip link del "$K8S_BRIDGE"
}

# remove_chains iptables|ip6tables: the KUBE-* chains that were not there
# before up, and every rule that jumps to them. Other chains, Docker's
# included, and the built-in chains' policies are left alone.
remove_chains() {
	local cmd=$1 fam="" t chain rule ours
	[ "$cmd" = ip6tables ] && fam="6 "
	if [ ! -f "$BASELINE/chains" ]; then
		log "no baseline from up.sh: leaving $cmd chains alone"
		return 0
	fi
	for t in filter nat mangle raw; do
		ours=$(comm -23 <("$cmd-save" -t "$t" | awk '/^:KUBE-/ {print substr($1, 2)}' | sort) \
			<(sed -n "s/^$fam$t //p" "$BASELINE/chains" | sort))
		[ -n "$ours" ] || continue
		log "removing $cmd $t chains: ${ours//$'\n'/ }"
		"$cmd-save" -t "$t" | awk -v ours="$ours" '
			BEGIN { n = split(ours, a, "\n"); for (i = 1; i <= n; i++) mine[a[i]] = 1 }
			/^-A / && !($2 in mine) {
				for (i = 3; i < NF; i++) if (($i == "-j" || $i == "-g") && ($(i + 1) in mine)) { sub(/^-A /, "-D "); print; next }
			}' | while read -r rule; do eval "$cmd -t $t $rule"; done
		for chain in $ours; do "$cmd" -t "$t" -F "$chain"; done
		for chain in $ours; do "$cmd" -t "$t" -X "$chain"; done
	done
}

# remove_ipsets: the sets kube-router made (those not there before up).
remove_ipsets() {
	local ipset=$K8S_STATE/bin/ipset set
	if [ ! -f "$BASELINE/ipsets" ] || [ ! -x "$ipset" ]; then
		log "no baseline or build from up.sh: leaving ipsets alone"
		return 0
	fi
	for set in $(comm -23 <("$ipset" list -n | sort) <(sort "$BASELINE/ipsets")); do
		"$ipset" destroy "$set"
	done
}

# restore_host: sysctls, a module we loaded, and the host paths the kubelet
# and libcni create: removed if they were not there before up, else our
# entries in them.
restore_host() {
	local kv p
	if [ -f "$BASELINE/sysctl" ]; then
		while read -r kv; do
			[ "$(sysctl -n "${kv%%=*}")" = "${kv#*=}" ] || sysctl -q -w "$kv"
		done <"$BASELINE/sysctl"
	fi
	if [ -f "$BASELINE/absent" ]; then
		while read -r p; do rm -rf "$p"; done <"$BASELINE/absent"
	fi
	rm -f /var/lib/cni/results/sandgate-k8s-*
	[ ! -d /var/log/containers ] || find /var/log/containers -maxdepth 1 -lname "$K8S_STATE/*" -delete
	if [ -f "$BASELINE/modules" ]; then
		xargs -r modprobe -r <"$BASELINE/modules" || log "warning: could not unload $(cat "$BASELINE/modules")"
	fi
}

main "$@"
