#!/usr/bin/env bash
# Builds the sandbox images.
#
#   images/build.sh [image...]     # default: base
#
# Each image is built from images/<name>/. A host that can pull from a
# registry builds images/<name>/Dockerfile; a host that cannot (no
# registry, only a Debian mirror) builds the same image offline: a
# debootstrap root with the same packages, finished by the same setup.sh,
# and loaded with `docker import`.
#
# A build is skipped when the image exists and carries the content hash of
# images/<name>/ and this script in its sandgate.image-hash label.
#
# Environment:
#   FORCE=1      rebuild even when the hash matches
#   OFFLINE=1    skip the registry probe and build offline
#   MIRROR=url   Debian mirror for the offline build (default: from apt)
set -euo pipefail

readonly IMAGES_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly SUITE=bookworm
readonly REGISTRY_PROBE_IMAGE=debian:bookworm-slim
readonly IMAGE_PATH=/usr/local/bin:/usr/bin:/bin

# The offline build's temporary root; removed on exit (see cleanup).
ROOTFS=""

log() { printf 'images: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

# cleanup removes the offline root. Anything still mounted below it (a
# debootstrap that died with /proc mounted) is unmounted first, and rm
# stays on one file system, so a leftover bind mount can never make it
# delete host files.
cleanup() {
	[[ -n "$ROOTFS" && -d "$ROOTFS" ]] || return 0
	local mnt
	awk -v root="$ROOTFS" 'index($2, root "/") == 1 { print $2 }' /proc/mounts |
		sort -r | while read -r mnt; do umount -l "$mnt" || true; done
	rm -rf --one-file-system "$ROOTFS"
}
trap cleanup EXIT

# image_hash prints a short digest of everything that defines an image:
# the files of images/<name>/ and this script (the offline recipe).
image_hash() {
	local name=$1
	(
		cd "$IMAGES_DIR"
		find "$name" build.sh -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
	) | sha256sum | cut -c1-16
}

# up_to_date reports whether image $1 exists with label hash $2.
up_to_date() {
	local have
	have=$(docker image inspect -f '{{index .Config.Labels "sandgate.image-hash"}}' "$1" 2>/dev/null) || return 1
	[[ "$have" == "$2" ]]
}

# registry_reachable reports whether `docker build` can pull its base
# image. It is probed once and cached; a host without a registry fails in
# seconds, the timeout bounds a host whose registry hangs.
REGISTRY=""
registry_reachable() {
	if [[ -z "$REGISTRY" ]]; then
		REGISTRY=no
		if [[ "${OFFLINE:-0}" != 1 ]]; then
			log "probing registry: docker pull $REGISTRY_PROBE_IMAGE"
			if timeout 20 docker pull -q "$REGISTRY_PROBE_IMAGE" >/dev/null 2>&1; then
				REGISTRY=yes
			fi
		fi
		log "registry reachable: $REGISTRY"
	fi
	[[ "$REGISTRY" == yes ]]
}

# debian_mirror prints the Debian mirror: $MIRROR, else the first URIs
# line of the deb822 sources, else the first non-security deb line of
# sources.list, else deb.debian.org.
debian_mirror() {
	local m="${MIRROR:-}"
	if [[ -z "$m" && -r /etc/apt/sources.list.d/debian.sources ]]; then
		m=$(awk '$1 == "URIs:" { print $2; exit }' /etc/apt/sources.list.d/debian.sources)
	fi
	if [[ -z "$m" && -r /etc/apt/sources.list ]]; then
		m=$(grep -E '^deb[[:space:]]' /etc/apt/sources.list | grep -v security | head -n1 |
			sed -E 's/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+).*/\2/') || true
	fi
	printf '%s\n' "${m:-http://deb.debian.org/debian}"
}

# packages prints images/<name>/packages.txt comma-separated, without
# comments, for debootstrap --include.
packages() {
	grep -Ev '^[[:space:]]*(#|$)' "$IMAGES_DIR/$1/packages.txt" | paste -sd, -
}

# build_dockerfile builds image $2 from images/$1/Dockerfile.
build_dockerfile() {
	local name=$1 tag=$2 hash=$3
	log "$tag: docker build images/$name"
	docker build --label "sandgate.image-hash=$hash" -t "$tag" "$IMAGES_DIR/$name"
}

# build_offline builds image $2 from a debootstrap root with the packages
# of images/$1/packages.txt, finished in a chroot by images/$1/setup.sh.
# The --change lines must match the Dockerfile's USER/WORKDIR/ENV/CMD.
build_offline() {
	local name=$1 tag=$2 hash=$3 mirror keyring=()
	command -v debootstrap >/dev/null || die "offline build needs debootstrap (apt-get install debootstrap)"
	[[ $EUID -eq 0 ]] || die "offline build needs root (debootstrap, chroot)"
	mirror=$(debian_mirror)
	[[ -r /usr/share/keyrings/debian-archive-keyring.gpg ]] &&
		keyring=(--keyring=/usr/share/keyrings/debian-archive-keyring.gpg)
	ROOTFS=$(mktemp -d /var/tmp/sandgate-rootfs.XXXXXX)

	log "$tag: debootstrap $SUITE from $mirror into $ROOTFS"
	debootstrap --variant=minbase "${keyring[@]}" --include="$(packages "$name")" \
		"$SUITE" "$ROOTFS" "$mirror" >&2

	log "$tag: running images/$name/setup.sh in the root"
	install -m 0755 "$IMAGES_DIR/$name/setup.sh" "$ROOTFS/tmp/setup.sh"
	chroot "$ROOTFS" /bin/sh /tmp/setup.sh
	rm -f "$ROOTFS/tmp/setup.sh"

	# /dev, /proc and /sys are provided by the container runtime; device
	# nodes debootstrap made have no place in an image.
	log "$tag: docker import"
	tar --numeric-owner -C "$ROOTFS" --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' -c . |
		docker import \
			--change "LABEL sandgate.image-hash=$hash" \
			--change 'USER 1000:1000' \
			--change 'WORKDIR /workspace' \
			--change 'ENV HOME=/workspace' \
			--change "ENV PATH=$IMAGE_PATH" \
			--change 'ENV LANG=C.UTF-8' \
			--change 'CMD ["/bin/bash"]' \
			- "$tag" >/dev/null
	cleanup
	ROOTFS=""
}

# remove_replaced removes image id $1 once a rebuild has taken its tag,
# unless a container (a live sandbox) still uses it; then it stays, and
# `docker image prune` takes it later.
remove_replaced() {
	local old=$1 tag=$2
	[[ -n "$old" && "$old" != "$(docker image inspect -f '{{.Id}}' "$tag")" ]] || return 0
	if docker image rm "$old" >/dev/null 2>&1; then
		log "$tag: removed the replaced image ${old#sha256:}"
	else
		log "$tag: kept the replaced image ${old#sha256:} (still in use)"
	fi
}

# build_image builds sandgate/<name>:latest unless it is up to date.
build_image() {
	local name=$1 tag="sandgate/$1:latest" hash start old
	[[ -f "$IMAGES_DIR/$name/Dockerfile" ]] || die "unknown image $name (no images/$name/Dockerfile)"
	hash=$(image_hash "$name")
	if [[ "${FORCE:-0}" != 1 ]] && up_to_date "$tag" "$hash"; then
		log "$tag: up to date (hash $hash); FORCE=1 rebuilds"
		return 0
	fi
	start=$SECONDS
	old=$(docker image inspect -f '{{.Id}}' "$tag" 2>/dev/null) || old=""
	if registry_reachable; then
		build_dockerfile "$name" "$tag" "$hash"
	else
		build_offline "$name" "$tag" "$hash"
	fi
	remove_replaced "$old" "$tag"
	log "$tag: built in $((SECONDS - start))s (hash $hash)"
}

# build_base builds the default sandbox image.
build_base() { build_image base; }

# A later browser image (chromium on top of base) gets its own
# build_browser; images are built in the order given.

main() {
	command -v docker >/dev/null || die "docker CLI not found"
	docker info >/dev/null 2>&1 || die "cannot reach the Docker engine: start dockerd or set DOCKER_HOST"
	local name
	[[ $# -gt 0 ]] || set -- base
	for name in "$@"; do
		declare -F "build_$name" >/dev/null || die "unknown image $name"
		"build_$name"
	done
}

main "$@"
