#!/usr/bin/env bash
# Builds sandgate/runner:latest, the image the Kubernetes provider's init
# container copies the runner from (`/runner install DEST`) into a volume
# that any sandbox image then runs it from. It holds the static runner
# binary at /runner and nothing else, not even a shell, and is imported
# from a one-file tar with `docker import`: no registry, no base image.
#
#   images/runner/build.sh [RUNNER]    # default: bin/runner (make runner)
#
# The build is skipped when the image exists and its sandgate.image-hash
# label is the content hash of the binary and of this script. The
# sandgate.runner-sha256 label is the binary's own SHA-256, so what an
# image holds can be checked without running it.
#
# Environment:
#   FORCE=1   rebuild even when the hash matches
set -euo pipefail

readonly TAG=sandgate/runner:latest
readonly HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

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

# import_image builds $TAG from binary $1 with labels hash $2 and sha256
# $3. It runs as the sandbox user (1000:1000) unless the pod says
# otherwise.
import_image() {
	STAGE=$(mktemp -d)
	install -m 0555 "$1" "$STAGE/runner"
	tar --numeric-owner --owner=0 --group=0 --mtime=@0 -C "$STAGE" -c runner |
		docker import \
			--change "LABEL sandgate.image-hash=$2" \
			--change "LABEL sandgate.runner-sha256=$3" \
			--change 'USER 1000:1000' \
			--change 'ENTRYPOINT ["/runner"]' \
			- "$TAG" >/dev/null
}

main() {
	local bin=${1:-$HERE/../../bin/runner} sum hash old
	[[ -f "$bin" && -x "$bin" ]] || die "$TAG needs the static runner at $bin: run make runner"
	docker info >/dev/null 2>&1 || die "cannot reach the Docker engine: start dockerd or set DOCKER_HOST"
	sum=$(sha256sum <"$bin" | cut -d' ' -f1)
	hash=$({ echo "$sum"; sha256sum <"$HERE/build.sh"; } | sha256sum | cut -c1-16)
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
