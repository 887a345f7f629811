#!/usr/bin/env bash
# Proves a running local cluster (make k8s-up) does what the Kubernetes
# provider needs: loads IMAGE (default sandgate/base:latest) from Docker,
# runs one pod under runc and one under gVisor, execs into both, and shows a
# default-deny NetworkPolicy blocking pod-to-pod traffic and an allow
# policy admitting it. Prints how long each step took; removes its pods and
# policies at the end. Usage: smoke.sh [IMAGE]
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

IMAGE=${1:-sandgate/base:latest}
SELECTOR=app=sandgate-smoke

main() {
	need_root
	[ -f "$K8S_KUBECONFIG" ] || die "the local cluster is not up: run 'make k8s-up'"
	trap cleanup EXIT
	timed "load $IMAGE" "$K8S_DIR/load-image.sh" "$IMAGE"
	timed "pod under runc Ready" run_pod smoke-runc runc client sleep 3600
	timed "pod under gVisor Ready" run_pod smoke-gvisor gvisor client sleep 3600
	timed "exec uname -a (runc)" kc exec smoke-runc -- uname -a
	timed "exec uname -a (gVisor)" kc exec smoke-gvisor -- uname -a
	timed "exec dmesg (gVisor's own kernel log)" kc exec smoke-gvisor -- sh -c 'dmesg | head -n 3'
	timed "web pod under gVisor Ready" run_pod smoke-web gvisor web python3 -m http.server 8000
	local web
	web=$(kc get pod smoke-web -o jsonpath='{.status.podIP}')
	timed "runc pod -> web pod, no policy: allowed" reach smoke-runc "$web"
	policy deny
	timed "default-deny applied: blocked" blocked smoke-runc "$web"
	timed "default-deny: the host still reaches the web pod" curl -fsS -o /dev/null -m 2 "http://$web:8000/"
	policy allow
	timed "allow client -> web:8000 applied: allowed" reach smoke-runc "$web"
	timed "allow: gVisor client -> web allowed too" reach smoke-gvisor "$web"
	log "smoke: all checks passed"
}

# timed WHAT CMD...: run CMD, print its output and how long it took.
timed() {
	local what=$1 t0 out
	shift
	t0=$EPOCHREALTIME
	out=$("$@" 2>&1) || die "$what: failed: $out"
	awk -v t0="$t0" -v t1="$EPOCHREALTIME" -v what="$what" 'BEGIN {printf "[%6.2f s] %s\n", t1 - t0, what}'
	[ -z "$out" ] || printf '           %s\n' "${out//$'\n'/$'\n'           }"
}

# run_pod NAME RUNTIMECLASS ROLE CMD...: create a locked-down pod, wait until Ready.
run_pod() {
	local name=$1 rc=$2 role=$3
	shift 3
	kc apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $name
  labels: {app: sandgate-smoke, role: $role}
spec:
  runtimeClassName: $rc
  automountServiceAccountToken: false
  enableServiceLinks: false
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: $IMAGE
    imagePullPolicy: Never
    command: [$(printf '"%s",' "$@" | sed 's/,$//')]
    securityContext:
      runAsNonRoot: true
      allowPrivilegeEscalation: false
      readOnlyRootFilesystem: true
      capabilities: {drop: [ALL]}
      seccompProfile: {type: RuntimeDefault}
EOF
	kc wait --for=condition=Ready "pod/$name" --timeout=60s >/dev/null
}

# reach POD IP: POD can fetch http://IP:8000/ (policies apply within seconds).
reach() {
	for _ in $(seq 10); do
		kc exec "$1" -- curl -fsS -o /dev/null -m 2 "http://$2:8000/" 2>/dev/null && { echo "connected to $2:8000"; return; }
		sleep 0.5
	done
	echo "$1 cannot reach $2:8000"
	return 1
}

# blocked POD IP: POD can no longer connect to IP:8000; prints curl's error.
blocked() {
	local err
	for _ in $(seq 10); do
		if ! err=$(kc exec "$1" -- curl -sS -o /dev/null -m 2 "http://$2:8000/" 2>&1); then
			echo "$1 -> $2:8000 blocked: ${err//$'\n'/ }"
			return
		fi
		sleep 0.5
	done
	echo "$1 still reaches $2:8000"
	return 1
}

# policy deny|allow: default-deny for the smoke pods, or that plus an allow
# rule from clients to the web pod's port 8000.
policy() {
	kc apply -f - >/dev/null <<EOF
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: smoke-default-deny, labels: {app: sandgate-smoke}}
spec:
  podSelector: {matchLabels: {app: sandgate-smoke}}
  policyTypes: [Ingress, Egress]
EOF
	[ "$1" = allow ] || return 0
	kc apply -f - >/dev/null <<EOF
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: smoke-client-to-web, labels: {app: sandgate-smoke}}
spec:
  podSelector: {matchLabels: {app: sandgate-smoke}}
  policyTypes: [Ingress, Egress]
  ingress:
  - from: [{podSelector: {matchLabels: {role: client}}}]
    ports: [{protocol: TCP, port: 8000}]
  egress:
  - to: [{podSelector: {matchLabels: {role: web}}}]
    ports: [{protocol: TCP, port: 8000}]
EOF
}

cleanup() {
	kc delete networkpolicy,pod -l "$SELECTOR" --grace-period=1 --wait=false >/dev/null 2>&1 || true
}

main "$@"
