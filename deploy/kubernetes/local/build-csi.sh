#!/usr/bin/env bash
# Builds the local cluster's storage: csi-workspace (csi-workspace/, our CSI
# driver: one loop-mounted ext4 image per volume, see its main.go) and
# csi-provisioner from the Go module proxy, and prints the directory
# holding them. Cached like build.sh's output, under
# $SANDGATE_K8S_CACHE/csi/<key>, the key hashing this script, the driver's
# sources (sandbox/workspace included) and the Go version. Why apart from
# build.sh: build.sh's key hashes build.sh, and a new key rebuilds
# Kubernetes; the driver changes more often than the cluster does.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PROVISIONER_VERSION=v6.4.0

GO=$(find_go)
REPO=$(cd "$K8S_DIR/../../.." && pwd)

# sources: every file the driver is built from, in a stable order.
sources() {
	find "$K8S_DIR/csi-workspace" "$REPO/sandbox/workspace" -type f \( -name '*.go' ! -name '*_test.go' -o -name 'go.*' \) | sort
	find "$REPO/sandbox" -maxdepth 1 -type f -name '*.go' ! -name '*_test.go' | sort
	echo "$REPO/go.mod" "$REPO/go.sum"
}

cache_key() {
	{
		cat "$K8S_DIR/build-csi.sh"
		sources | xargs cat
		"$GO" env GOVERSION
	} | sha256sum | cut -c1-16
}

go_() { nice -n 19 "$GO" "$@"; }

build() {
	local dir
	go_ -C "$K8S_DIR/csi-workspace" build -mod=readonly -trimpath -ldflags "-s -w" -o "$OUT/bin/" .
	dir=$(go_ mod download -json "github.com/kubernetes-csi/external-provisioner/v6@$PROVISIONER_VERSION" |
		sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
	go_ -C "$dir" build -mod=readonly -trimpath \
		-ldflags "-s -w -X main.version=$PROVISIONER_VERSION" -o "$OUT/bin/" ./cmd/csi-provisioner
}

main() {
	need_root
	local key dir in_use
	key=$(cache_key)
	FINAL=$K8S_CACHE/csi/$key
	[ -f "$FINAL/.complete" ] && { echo "$FINAL"; return; }
	lock "$K8S_CACHE/build.lock"
	[ -f "$FINAL/.complete" ] && { echo "$FINAL"; return; }
	local work=$K8S_CACHE/csi/$key.work t0=$SECONDS
	OUT=$work/out
	rm -rf "$work"
	mkdir -p "$work/tmp" "$OUT/bin" "$K8S_CACHE/go"
	export GOPATH=$K8S_CACHE/go/path GOMODCACHE=$K8S_CACHE/go/mod GOCACHE=$K8S_CACHE/go/build
	export GOTMPDIR=$work/tmp TMPDIR=$work/tmp GOTOOLCHAIN=local GOFLAGS="-buildvcs=false -modcacherw" CGO_ENABLED=0
	log "build: csi-workspace and csi-provisioner $PROVISIONER_VERSION into $FINAL (log: $work/build.log)"
	if ! build >>"$work/build.log" 2>&1; then
		tail -n 40 "$work/build.log" >&2
		die "build of the storage binaries failed (full log: $work/build.log)"
	fi
	touch "$OUT/.complete"
	rm -rf "$FINAL"
	mv "$OUT" "$FINAL"
	rm -rf "$work"
	log "build: storage binaries done in $((SECONDS - t0)) s"
	# Other keys' output goes, except what a running cluster uses.
	in_use=$(dirname "$(readlink "$K8S_STATE/csi-bin" 2>/dev/null || echo /nonexistent/bin)")
	for dir in "$K8S_CACHE"/csi/[0-9a-f]*; do
		[[ $dir == "$FINAL" || $dir == "$in_use" || ! -f $dir/.complete ]] && continue
		rm -rf "$dir"
	done
	echo "$FINAL"
}

main "$@"
