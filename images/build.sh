#!/usr/bin/env bash
# Builds the sandbox images.
#
#   images/build.sh [image...]     # default: base; e.g. base browser
#
# Each image is built from images/<name>/: its packages.txt is installed
# by images/setup.sh, which also finishes the root. A host that can pull
# from a registry builds images/<name>/Dockerfile; a host that cannot (no
# registry, only a Debian mirror) builds the same image offline: a
# debootstrap root with the same setup.sh run in a chroot, loaded with
# `docker import`. An image whose Dockerfile starts FROM a sandgate image
# (browser, FROM sandgate/base) is built with docker build on every host,
# after its parent, since its parent is local.
#
# A build is skipped when the image exists and carries, in its
# sandgate.image-hash label, the content hash of images/<name>/, setup.sh,
# static-sh.sh and this script, and of its parent image's id.
#
# Environment:
#   FORCE=1      rebuild even when the hash matches
#   OFFLINE=1    skip the registry probe and build offline
#   MIRROR=url   Debian mirror for the offline build, with $SUITE and
#                $SUITE-updates (default: from apt)
#   SECURITY_MIRROR=url  Debian security mirror for the offline build
#                (default: from apt, else deb.debian.org); "none" builds
#                without security updates
set -euo pipefail

readonly IMAGES_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly SUITE=bookworm
readonly REGISTRY_PROBE_IMAGE=debian:bookworm-slim

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

# image_hash prints a short digest of everything that defines image $1:
# the files of images/$1/ (its Go tests aside), setup.sh, static-sh.sh,
# this script (the offline recipe) and the id of its parent image $2, if
# any, so a rebuilt parent rebuilds it.
image_hash() {
	local name=$1 parent=$2
	{
		(cd "$IMAGES_DIR" && find "$name" setup.sh static-sh.sh build.sh -type f ! -name '*_test.go' -print0 |
			LC_ALL=C sort -z | xargs -0 sha256sum)
		[[ -z "$parent" ]] || docker image inspect -f '{{.Id}}' "$parent"
	} | sha256sum | cut -c1-16
}

# local_parent prints the sandgate image that images/$1/Dockerfile starts
# FROM, or nothing when it starts from a registry image.
local_parent() {
	awk 'toupper($1) == "FROM" { if ($2 ~ /^sandgate\//) print $2; exit }' "$IMAGES_DIR/$1/Dockerfile"
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

# security_mirror prints the Debian security mirror: $SECURITY_MIRROR,
# else the one apt uses for $SUITE-security on this host, else
# deb.debian.org.
security_mirror() {
	local m="${SECURITY_MIRROR:-}"
	[[ -n "$m" ]] || m=$(apt-cache policy 2>/dev/null |
		awk -v s="$SUITE-security/" 'index($3, s) == 1 { print $2; exit }') || true
	printf '%s\n' "${m:-http://deb.debian.org/debian-security}"
}

# apt_sources prints the sources.list of an offline root: the release and
# its updates from mirror $1, and the security suite, as in a registry
# base image; without it the image would miss every fix since the release.
apt_sources() {
	local mirror=$1 security
	security=$(security_mirror)
	printf 'deb %s %s main\n' "$mirror" "$SUITE" "$mirror" "$SUITE-updates"
	if [[ "$security" == none ]]; then
		log "warning: SECURITY_MIRROR=none: the image gets no security updates"
	else
		printf 'deb %s %s-security main\n' "$security" "$SUITE"
	fi
}

# image_config prints the USER, WORKDIR, ENV and CMD instructions of
# images/$1/Dockerfile, continuation lines joined, one per line: the
# docker import --change list that gives the offline image the same
# config as the Dockerfile's.
image_config() {
	sed -e ':a' -e '/\\$/{N;s/\\\n[[:space:]]*/ /;ba' -e '}' "$IMAGES_DIR/$1/Dockerfile" |
		grep -E '^(USER|WORKDIR|ENV|CMD)[[:space:]]'
}

# build_dockerfile builds image $2 from images/$1/Dockerfile. The context
# is images/, for the shared setup.sh. RUN steps use the host's network,
# so a Debian mirror the host reaches (a proxy on 127.0.0.1, say) serves
# them as it serves the offline build. A failed build leaves no container
# holding on to the parent image.
build_dockerfile() {
	local name=$1 tag=$2 hash=$3
	log "$tag: docker build images/$name"
	docker build --force-rm --network host --label "sandgate.image-hash=$hash" -t "$tag" \
		-f "$IMAGES_DIR/$name/Dockerfile" "$IMAGES_DIR"
}

# build_offline builds image $2 from a debootstrap root in which
# images/setup.sh installs images/$1/packages.txt, with the config of
# images/$1/Dockerfile.
build_offline() {
	local name=$1 tag=$2 hash=$3 mirror keyring=() changes=() line
	command -v debootstrap >/dev/null || die "offline build needs debootstrap (apt-get install debootstrap)"
	[[ $EUID -eq 0 ]] || die "offline build needs root (debootstrap, chroot)"
	mirror=$(debian_mirror)
	[[ -r /usr/share/keyrings/debian-archive-keyring.gpg ]] &&
		keyring=(--keyring=/usr/share/keyrings/debian-archive-keyring.gpg)
	ROOTFS=$(mktemp -d /var/tmp/sandgate-rootfs.XXXXXX)

	log "$tag: debootstrap $SUITE from $mirror into $ROOTFS"
	debootstrap --variant=minbase "${keyring[@]}" "$SUITE" "$ROOTFS" "$mirror" >&2

	log "$tag: running images/setup.sh in the root"
	apt_sources "$mirror" >"$ROOTFS/etc/apt/sources.list"
	# apt in the chroot resolves the mirror with the host's resolver; the
	# file is removed afterwards (Docker provides one at run time).
	cp -L /etc/resolv.conf "$ROOTFS/etc/resolv.conf"
	mkdir "$ROOTFS/tmp/sandgate-image"
	cp "$IMAGES_DIR/$name/packages.txt" "$IMAGES_DIR/setup.sh" "$IMAGES_DIR/static-sh.sh" "$ROOTFS/tmp/sandgate-image/"
	if [[ -f "$IMAGES_DIR/$name/install.sh" ]]; then
		cp "$IMAGES_DIR/$name/install.sh" "$ROOTFS/tmp/sandgate-image/"
		# Its downloads trust what the host trusts (a TLS-inspecting
		# proxy's CA, say); removed with the directory below.
		if [[ -r /etc/ssl/certs/ca-certificates.crt ]]; then
			cp -L /etc/ssl/certs/ca-certificates.crt "$ROOTFS/tmp/sandgate-image/host-ca.pem"
		fi
	fi
	mount -t proc proc "$ROOTFS/proc"
	chroot "$ROOTFS" /bin/sh /tmp/sandgate-image/setup.sh >&2
	umount "$ROOTFS/proc"
	rm -rf "$ROOTFS/tmp/sandgate-image" "$ROOTFS/etc/resolv.conf"

	changes=(--change "LABEL sandgate.image-hash=$hash")
	while IFS= read -r line; do
		changes+=(--change "$line")
	done < <(image_config "$name")

	# /dev, /proc and /sys are provided by the container runtime; device
	# nodes debootstrap made have no place in an image.
	log "$tag: docker import"
	tar --numeric-owner -C "$ROOTFS" --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' -c . |
		docker import "${changes[@]}" - "$tag" >/dev/null
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

# build_image builds sandgate/<name>:latest unless it is up to date or
# was already built in this run. An image on a local parent is built with
# docker build, which needs no registry; the parent must exist.
BUILT=" "
build_image() {
	local name=$1 tag="sandgate/$1:latest" parent hash start old
	[[ "$BUILT" != *" $name "* ]] || return 0
	[[ -f "$IMAGES_DIR/$name/Dockerfile" ]] || die "unknown image $name (no images/$name/Dockerfile)"
	parent=$(local_parent "$name")
	if [[ -n "$parent" ]]; then
		docker image inspect "$parent" >/dev/null 2>&1 || die "$tag needs $parent: build it first"
	fi
	hash=$(image_hash "$name" "$parent")
	BUILT+="$name "
	if [[ "${FORCE:-0}" != 1 ]] && up_to_date "$tag" "$hash"; then
		log "$tag: up to date (hash $hash); FORCE=1 rebuilds"
		return 0
	fi
	start=$SECONDS
	old=$(docker image inspect -f '{{.Id}}' "$tag" 2>/dev/null) || old=""
	if [[ -n "$parent" ]] || registry_reachable; then
		build_dockerfile "$name" "$tag" "$hash"
	else
		build_offline "$name" "$tag" "$hash"
	fi
	remove_replaced "$old" "$tag"
	log "$tag: built in $((SECONDS - start))s (hash $hash)"
}

# build_base builds the default sandbox image.
build_base() { build_image base; }

# build_browser builds base, then the browser image on top of it.
build_browser() {
	build_base
	build_image browser
}

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
