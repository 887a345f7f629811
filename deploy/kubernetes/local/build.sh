#!/usr/bin/env bash
# Builds every binary the local single-node Kubernetes needs (Kubernetes,
# etcd, containerd 2, gVisor, kube-router from the Go module proxy; runc, CNI
# plugins and ipset from Debian's archive; a static pause image) and prints
# the directory holding them. Why: no registry or release download is
# reachable here, and a cold build takes ~8.5 min on 2 idle cores (far
# longer on a busy machine), so the output is cached under
# $SANDGATE_K8S_CACHE (default /var/cache/sandgate-k8s), keyed on the pinned
# versions and this script; a second run prints the cached directory at
# once. Go's module and build caches are kept there too, so a rebuild for a
# new key mostly links.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

K8S_VERSION=1.34.4
ETCD_VERSION=v3.6.4
CONTAINERD_VERSION=v2.1.5
# The exact pseudo-version: the proxy refuses to list gVisor's versions, and
# older ones do not compile with Go 1.26.
GVISOR_VERSION=v0.0.0-20260701204157-69c2d17aea96
KUBE_ROUTER_VERSION=v2.1.0
DEBIAN_PACKAGES=(runc containernetworking-plugins ipset libipset13 libmnl0)

GO=$(find_go)

cache_key() {
	{
		cat "$K8S_DIR/build.sh" "$K8S_DIR/gvisor-oom-score.patch"
		"$GO" env GOVERSION
		echo "$K8S_PAUSE_IMAGE"
	} | sha256sum | cut -c1-16
}

# step NAME FUNCTION: run one build step, its output in the build log. The
# step runs as a background job so that `set -e` holds inside it.
step() {
	local t0=$SECONDS rc=0
	log "build: $1"
	"$2" >>"$WORK/build.log" 2>&1 &
	wait $! || rc=$?
	if [ "$rc" != 0 ]; then
		tail -n 40 "$WORK/build.log" >&2
		die "build step '$1' failed (full log: $WORK/build.log)"
	fi
	log "build: $1 done in $((SECONDS - t0)) s"
}

# go_ ARGS: the Go toolchain at the lowest CPU priority (others share the machine).
go_() { nice -n 19 "$GO" "$@"; }

debian_packages() {
	mkdir -p "$WORK/debs" "$WORK/root" "$OUT/bin" "$OUT/lib" "$OUT/libexec" "$OUT/cni"
	cd "$WORK/debs"
	if ! apt-get download "${DEBIAN_PACKAGES[@]}"; then
		apt-get update
		apt-get download "${DEBIAN_PACKAGES[@]}"
	fi
	local deb
	for deb in *.deb; do dpkg-deb -x "$deb" "$WORK/root"; done
	cp "$WORK/root/usr/sbin/runc" "$OUT/bin/"
	cp -a "$WORK/root/usr/lib/cni/." "$OUT/cni/"
	cp -a "$WORK/root/usr/lib/x86_64-linux-gnu/"lib{ipset,mnl}.so.* "$OUT/lib/"
	cp "$WORK/root/usr/sbin/ipset" "$OUT/libexec/"
	# kube-router runs `ipset` from PATH: point it at Debian's, with its libraries.
	cat >"$OUT/bin/ipset" <<'EOF'
#!/bin/sh
d=$(dirname "$(dirname "$(readlink -f "$0")")")
LD_LIBRARY_PATH=$d/lib exec "$d/libexec/ipset" "$@"
EOF
	chmod 0755 "$OUT/bin/ipset"
	"$OUT/bin/ipset" version
}

# mod_dir MODULE@VERSION: download a module; print its (read-only) source dir.
mod_dir() { go_ mod download -json "$1" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p'; }

# kubernetes: k8s.io/kubernetes cannot be built in place (its staging modules
# are not in its module zip), so build its commands, and etcd's server, from a
# module that requires it and pins each staging module to the matching v0.x.
kubernetes() {
	local kdir cmds=() c
	kdir=$(mod_dir "k8s.io/kubernetes@v$K8S_VERSION")
	mkdir -p "$WORK/src/k8s"
	cd "$WORK/src/k8s"
	{
		printf 'module k8sbuild\n\n'
		grep -E '^(go|godebug) ' "$kdir/go.mod"
		printf '\nrequire k8s.io/kubernetes v%s\n\nreplace (\n' "$K8S_VERSION"
		sed -n '/^replace (/,/^)/p' "$kdir/go.mod" | awk -v v="v0.${K8S_VERSION#1.}" '/=>/ && !/sample-/ {print "\t" $1 " => " $1 " " v}'
		echo ')'
	} >go.mod
	for c in kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl; do cmds+=("k8s.io/kubernetes/cmd/$c"); done
	go_ get "${cmds[@]/%/@v$K8S_VERSION}" "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
	local v=v$K8S_VERSION minor=${K8S_VERSION#1.}
	minor=${minor%%.*}
	local ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$v -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/client-go/pkg/version.gitVersion=$v"
	go_ build -trimpath -ldflags "$ldflags" -o "$OUT/bin/" "${cmds[@]}"
	go_ build -trimpath -ldflags "-s -w" -o "$OUT/bin/etcd" go.etcd.io/etcd/server/v3
}

# The others build in place, with their own go.mod and go.sum; -mod=readonly
# also keeps containerd's stub vendor/modules.txt out of the way.
containerd() {
	local dir
	dir=$(mod_dir "github.com/containerd/containerd/v2@$CONTAINERD_VERSION")
	go_ -C "$dir" build -mod=readonly -trimpath -tags "no_btrfs no_devmapper no_zfs" \
		-ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=$CONTAINERD_VERSION" \
		-o "$OUT/bin/" ./cmd/containerd ./cmd/containerd-shim-runc-v2 ./cmd/ctr
}

gvisor() {
	local src=$WORK/src/gvisor upstream
	upstream=$(mod_dir "gvisor.dev/gvisor@$GVISOR_VERSION")
	cp -r "$upstream" "$src"
	chmod -R u+w "$src"
	patch -p1 -d "$src" <"$K8S_DIR/gvisor-oom-score.patch"
	go_ -C "$src" build -mod=readonly -trimpath -ldflags "-s -w" -o "$OUT/bin/runsc" ./runsc
	go_ -C "$src" build -mod=readonly -trimpath -ldflags "-s -w" -o "$OUT/bin/containerd-shim-runsc-v1" ./shim
}

kube_router() {
	local dir
	dir=$(mod_dir "github.com/cloudnativelabs/kube-router/v2@$KUBE_ROUTER_VERSION")
	go_ -C "$dir" build -mod=readonly -trimpath -ldflags "-s -w" -o "$OUT/bin/" ./cmd/kube-router
}

# pause: the static pause binary from the Kubernetes source, packed as a
# one-layer OCI image archive that `ctr images import` accepts.
pause() {
	local img=$WORK/pause-image kdir ldigest lsize cdigest csize mdigest msize
	kdir=$(mod_dir "k8s.io/kubernetes@v$K8S_VERSION")
	mkdir -p "$img/rootfs" "$img/oci/blobs/sha256" "$OUT/images"
	nice -n 19 gcc -Os -static -o "$img/rootfs/pause" "$kdir/build/pause/linux/pause.c"
	strip "$img/rootfs/pause"
	tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$img/rootfs" -cf "$img/layer.tar" .
	ldigest=$(blob "$img" "$img/layer.tar")
	lsize=$(blob_size "$img" "$ldigest")
	printf '{"architecture":"amd64","os":"linux","config":{"Entrypoint":["/pause"],"WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
		"$ldigest" >"$img/config.json"
	cdigest=$(blob "$img" "$img/config.json")
	csize=$(blob_size "$img" "$cdigest")
	printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
		"$cdigest" "$csize" "$ldigest" "$lsize" >"$img/manifest.json"
	mdigest=$(blob "$img" "$img/manifest.json")
	msize=$(blob_size "$img" "$mdigest")
	printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"architecture":"amd64","os":"linux"},"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
		"$mdigest" "$msize" "$K8S_PAUSE_IMAGE" "${K8S_PAUSE_IMAGE##*:}" >"$img/oci/index.json"
	echo '{"imageLayoutVersion":"1.0.0"}' >"$img/oci/oci-layout"
	tar -C "$img/oci" -cf "$OUT/images/pause.tar" oci-layout index.json blobs
}

# blob DIR FILE: move FILE into DIR's OCI blob store; print its digest.
blob() {
	local digest
	digest=$(sha256sum "$2" | cut -d' ' -f1)
	mv "$2" "$1/oci/blobs/sha256/$digest"
	echo "$digest"
}

blob_size() { stat -c %s "$1/oci/blobs/sha256/$2"; }

main() {
	need_root
	ensure_packages gcc:gcc strip:binutils patch:patch dpkg-deb:dpkg /usr/lib/x86_64-linux-gnu/libc.a:libc6-dev \
		/etc/ssl/certs/ca-certificates.crt:ca-certificates
	local key
	key=$(cache_key)
	FINAL=$K8S_CACHE/$key
	if [ -f "$FINAL/.complete" ]; then
		echo "$FINAL"
		return
	fi
	lock "$K8S_CACHE/build.lock"
	if [ -f "$FINAL/.complete" ]; then # built while we waited for the lock
		echo "$FINAL"
		return
	fi
	WORK=$K8S_CACHE/$key.work
	OUT=$WORK/out
	rm -rf "$WORK"
	mkdir -p "$WORK/tmp" "$K8S_CACHE/go"
	export GOPATH=$K8S_CACHE/go/path GOMODCACHE=$K8S_CACHE/go/mod GOCACHE=$K8S_CACHE/go/build
	export GOTMPDIR=$WORK/tmp TMPDIR=$WORK/tmp GOTOOLCHAIN=local GOFLAGS="-buildvcs=false -modcacherw" CGO_ENABLED=0
	log "build: building into $FINAL (cold: about 8.5 min on 2 idle cores; log: $WORK/build.log)"
	local t0=$SECONDS
	step "Debian packages: ${DEBIAN_PACKAGES[*]}" debian_packages
	step "kube-apiserver, controller-manager, scheduler, kubelet, kubectl $K8S_VERSION; etcd $ETCD_VERSION" kubernetes
	step "containerd $CONTAINERD_VERSION" containerd
	step "gVisor runsc + containerd-shim-runsc-v1 $GVISOR_VERSION (patched)" gvisor
	step "kube-router $KUBE_ROUTER_VERSION" kube_router
	step "pause image $K8S_PAUSE_IMAGE" pause
	touch "$OUT/.complete"
	rm -rf "$FINAL"
	mv "$OUT" "$FINAL"
	rm -rf "$WORK"
	log "build: done in $((SECONDS - t0)) s"
	prune_old_builds
	echo "$FINAL"
}

# prune_old_builds: drop the output of other keys, except the build a
# running cluster uses.
prune_old_builds() {
	local dir in_use
	in_use=$(dirname "$(readlink "$K8S_STATE/bin" 2>/dev/null || echo /nonexistent/bin)")
	for dir in "$K8S_CACHE"/[0-9a-f]*; do
		[[ $dir == "$FINAL" || $dir == "$in_use" || ! -f $dir/.complete ]] && continue
		log "build: removing the old build $dir"
		rm -rf "$dir"
	done
}

main "$@"
