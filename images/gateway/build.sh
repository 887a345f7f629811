#!/usr/bin/env bash
# Builds sandgate/gateway:latest, the gateway's image for Kubernetes
# (deploy/kubernetes/). There the gateway needs neither root nor mke2fs nor
# the Docker socket, unlike the compose image (deploy/Dockerfile, FROM
# sandgate/base, root): it talks to the API server and to the runners over
# TCP and writes only under --var. So the image holds the static gateway
# at /gateway and the host's CA bundle, which verifies the OIDC issuer's
# TLS (--issuer, its JWKS); nothing else, not even a shell. It is imported
# from a tar with `docker import`, like images/runner: no registry, no
# base image.
#
#   images/gateway/build.sh [GATEWAY]    # default: bin/gateway (make build)
#
# GATEWAY must be static (CGO_ENABLED=0, as make build does): the image
# has no C library. The build is skipped when the image exists and its
# sandgate.image-hash label is the content hash of the binary, the CA
# bundle and this script. sandgate.gateway-sha256 is the binary's own
# SHA-256.
#
# Environment:
#   FORCE=1   rebuild even when the hash matches
#   CA_BUNDLE=file   PEM bundle to install (default: Debian's)
set -euo pipefail

readonly TAG=sandgate/gateway:latest
readonly HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly CA=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
# A uid and gid of no one on the host or in a sandbox (sandboxes run as
# 1000); the pod's securityContext names the same numbers.
readonly USER_ID=65532

log() { printf 'images: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

# The staging directory of the tar; removed on exit.
STAGE=""
trap '[[ -z "$STAGE" ]] || rm -rf "$STAGE"' EXIT

# label prints label $1 of $TAG, or nothing when there is no such image.
label() {
	docker image inspect -f "{{index .Config.Labels \"$1\"}}" "$TAG" 2>/dev/null || true
}

# check_static fails unless Go says binary $1 was built without cgo.
check_static() {
	local info
	command -v go >/dev/null || die "go is not on PATH: it checks that $1 is static (make images puts it there)"
	info=$(go version -m "$1") || die "$1 is not a Go binary"
	grep -q $'^\tbuild\tCGO_ENABLED=0$' <<<"$info" ||
		die "$1 was built with cgo; the image has no C library: CGO_ENABLED=0 go build -o $1 ./cmd/gateway (make build)"
}

# import_image builds $TAG from binary $1 with labels hash $2 and sha256 $3.
import_image() {
	STAGE=$(mktemp -d)
	install -m 0555 "$1" "$STAGE/gateway"
	install -D -m 0444 "$CA" "$STAGE/etc/ssl/certs/ca-certificates.crt"
	tar --numeric-owner --owner=0 --group=0 --mtime=@0 -C "$STAGE" -c gateway etc |
		docker import \
			--change "LABEL sandgate.image-hash=$2" \
			--change "LABEL sandgate.gateway-sha256=$3" \
			--change "USER $USER_ID:$USER_ID" \
			--change 'ENTRYPOINT ["/gateway"]' \
			- "$TAG" >/dev/null
}

main() {
	local bin=${1:-$HERE/../../bin/gateway} sum hash old
	[[ -f "$bin" && -x "$bin" ]] || die "$TAG needs the static gateway at $bin: run make build"
	[[ -s "$CA" ]] || die "no CA bundle at $CA: install ca-certificates or set CA_BUNDLE"
	docker info >/dev/null 2>&1 || die "cannot reach the Docker engine: start dockerd or set DOCKER_HOST"
	check_static "$bin"
	sum=$(sha256sum <"$bin" | cut -d' ' -f1)
	hash=$({ echo "$sum"; sha256sum <"$CA"; sha256sum <"$HERE/build.sh"; } | sha256sum | cut -c1-16)
	if [[ "${FORCE:-0}" != 1 && "$(label sandgate.image-hash)" == "$hash" ]]; then
		log "$TAG: up to date (hash $hash); FORCE=1 rebuilds"
		return 0
	fi
	old=$(docker image inspect -f '{{.Id}}' "$TAG" 2>/dev/null) || old=""
	import_image "$bin" "$hash" "$sum"
	# The replaced image goes unless a container still uses it.
	if [[ -n "$old" && "$old" != "$(docker image inspect -f '{{.Id}}' "$TAG")" ]]; then
		docker image rm "$old" >/dev/null 2>&1 || log "$TAG: kept the replaced image ${old#sha256:} (still in use)"
	fi
	log "$TAG: built from $bin (hash $hash)"
}

main "$@"
