#!/bin/sh
# Installs what the base image needs beyond Debian packages; setup.sh
# runs it after packages.txt (curl and coreutils are there by then).
#
# ast-grep: the structural code search of the search_code tool
# (runner/codesearch). Its prebuilt binary comes from the npm registry,
# pinned to one version and checked against the sha512 the registry
# publishes (`npm view @ast-grep/cli-linux-x64-gnu@VERSION dist.integrity`).
# Only ast-grep is installed, not its "sg" alias: Debian's /usr/bin/sg is
# newgrp, and a sg earlier on PATH would shadow it. The binary links
# glibc (2.34 or later), which bookworm has.
set -eu

version=0.51.1
arch=$(dpkg --print-architecture)
case $arch in
amd64)
	pkg=cli-linux-x64-gnu
	integrity=sha512-FlaaRLyopXet+zFrWOdlTbyJb+QqZzgV9jxIbgz0FoVsJSaJ6jsenO/6bgYJk4zPOCUODuvoQ1/XFlB4r6BdcQ==
	;;
arm64)
	pkg=cli-linux-arm64-gnu
	integrity=sha512-ix/97iBUPGvf9KrhKRcooSJLmwBgAo7GhKHm7VH30kpxOMUrNLqiTXJj2eZVLiO2xQdUFnbwhVn+A7blSlYLJQ==
	;;
*)
	echo "install.sh: no ast-grep build for architecture $arch" >&2
	exit 1
	;;
esac

# The offline build hands in the host's CA bundle (host-ca.pem), so a
# host that reaches the registry through a TLS-inspecting proxy fetches
# as its own npm does; the sha512 below is what vouches for the bytes.
here=$(dirname "$0")
set --
if [ -f "$here/host-ca.pem" ]; then
	set -- --cacert "$here/host-ca.pem"
fi
tmp=$(mktemp -d)
url="https://registry.npmjs.org/@ast-grep/$pkg/-/$pkg-$version.tgz"
curl -fsSL --retry 3 "$@" -o "$tmp/pkg.tgz" "$url"
want=$(printf '%s' "${integrity#sha512-}" | base64 -d | od -An -v -tx1 | tr -d ' \n')
have=$(sha512sum "$tmp/pkg.tgz" | cut -d' ' -f1)
if [ "$want" != "$have" ]; then
	echo "install.sh: $url has sha512 $have, want $want (the pinned npm integrity)" >&2
	exit 1
fi
tar -xzf "$tmp/pkg.tgz" -C "$tmp" package/ast-grep
install -m 0755 "$tmp/package/ast-grep" /usr/local/bin/ast-grep
rm -rf "$tmp"
/usr/local/bin/ast-grep --version
