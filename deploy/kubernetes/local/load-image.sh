#!/usr/bin/env bash
# Loads Docker images into the local cluster's containerd without a
# registry: `docker save IMAGE | ctr import`, into the namespace the CRI
# uses, so pods can run them with imagePullPolicy: Never. An image whose
# Docker image id is already loaded is skipped (a label records the id).
# Usage: load-image.sh IMAGE[:TAG]...
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

LABEL=sandgate.dev/docker-image-id

main() {
	need_root
	[ $# -gt 0 ] || die "usage: $0 IMAGE[:TAG]..."
	ctr_ version >/dev/null 2>&1 || die "the local cluster's containerd is not running ($K8S_SOCK): run 'make k8s-up'"
	local image
	for image in "$@"; do load "$image"; done
}

load() {
	local id ref t0=$SECONDS
	id=$(docker image inspect -f '{{.Id}}' "$1") || die "$1: no such image in Docker"
	ref=$(normalize "$1")
	if [ "$(ctr_ images ls "name==$ref" | awk -v l="$LABEL=$id" 'NR > 1 && index($0, l) {print "loaded"}')" = loaded ]; then
		log "$ref: already loaded ($id)"
		return
	fi
	log "$ref: loading $id"
	docker save "$1" | ctr_ images import - >/dev/null
	ctr_ images label "$ref" "$LABEL=$id" >/dev/null
	log "$ref: loaded in $((SECONDS - t0)) s"
}

# normalize IMAGE: the full reference containerd and the kubelet use
# (sandgate/base -> docker.io/sandgate/base:latest).
normalize() {
	local ref=$1 first=${1%%/*}
	if [[ $ref != */* ]]; then
		ref=docker.io/library/$ref
	elif [[ $first != *[.:]* && $first != localhost ]]; then
		ref=docker.io/$ref
	fi
	[[ ${ref##*/} == *:* || $ref == *@* ]] || ref=$ref:latest
	echo "$ref"
}

main "$@"
