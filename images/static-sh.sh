#!/bin/sh
# Replaces the root's /bin/dash, and so /bin/sh, with the same Debian
# dash (the installed version, Debian's patches and configure flags)
# linked statically against musl. setup.sh runs it in every image, as
# root inside the root, after the packages are installed.
#
# Why: every run_shell call is `sh -c COMMAND`, so the shell's start is
# paid on every call. Debian's dash is linked against glibc, whose
# loader and start-up (ld.so relocations, and CPU feature and cache
# probing with cpuid, an instruction a virtual machine traps) cost about
# 0.6 ms of CPU per start on a 2-core VM; the musl build starts in about
# 0.15 ms, with the same shell language and builtins.
#
# Differences from Debian's build, all from the C library: musl keeps
# real-time signal 34 for itself, so `trap ... RTMIN` is refused (kill
# -RTMIN still sends 34: the signal names come from glibc's headers, as
# in Debian's build); and the binary is not position-independent (musl's
# gcc wrapper cannot link a static PIE). Neither is a boundary: the shell
# runs the sandbox user's own code. The packaged binary stays, diverted,
# at /bin/dash.glibc.
#
# The source is Debian's source package of the installed version, fetched
# by apt from the root's own mirrors (their deb-src side), so apt checks
# it against the signed release files as it checks every package. The
# build tools are removed again; running this twice does nothing the
# second time.
set -eu

log() { echo "static-sh: $*" >&2; }
die() {
	log "error: $*"
	exit 1
}

version=$(dpkg-query -W -f '${Version}' dash)
marker=/usr/share/sandgate/static-dash.version
if [ -f /bin/dash.glibc ] && [ "$(cat "$marker" 2>/dev/null)" = "$version" ]; then
	log "dash $version is already the static build"
	exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The root's sources, their deb-src side, in an apt configuration of
# their own: the root's package lists and sources stay as they were.
mkdir -p "$work/apt/sources.list.d" "$work/apt/lists/partial"
if [ -f /etc/apt/sources.list ]; then
	sed -n 's/^deb[[:space:]]/deb-src /p' /etc/apt/sources.list >"$work/apt/sources.list"
fi
for f in /etc/apt/sources.list.d/*.sources; do
	[ -f "$f" ] || continue
	sed 's/^Types:.*/Types: deb-src/' "$f" >"$work/apt/sources.list.d/$(basename "$f")"
done
for f in /etc/apt/sources.list.d/*.list; do
	[ -f "$f" ] || continue
	sed -n 's/^deb[[:space:]]/deb-src /p' "$f" >"$work/apt/sources.list.d/$(basename "$f")"
done
src_apt() {
	apt-get -o Dir::Etc::SourceList="$work/apt/sources.list" \
		-o Dir::Etc::SourceParts="$work/apt/sources.list.d" \
		-o Dir::State::Lists="$work/apt/lists" "$@"
}
log "fetching the source of dash $version"
src_apt update >&2 || die "apt-get update of the deb-src indexes failed: the mirror must serve Debian's sources"
(cd "$work" && src_apt source --download-only "dash=$version" >&2) ||
	die "apt-get source dash=$version failed: the mirror must serve the source of the installed dash"

# The build tools, removed again below: exactly the packages that were
# not installed before.
dpkg-query -W -f '${Package}\n' | sort >"$work/before"
apt-get install -y --no-install-recommends gcc libc6-dev musl-tools autoconf automake make dpkg-dev >&2
dpkg-query -W -f '${Package}\n' | sort >"$work/after"

(
	cd "$work"
	# dpkg-source warns that it cannot check the .dsc's signature (no
	# Debian keyring here); apt has checked every file against the
	# signed indexes already.
	dpkg-source -x dash_*.dsc src >&2
	cd src
	# Debian's patches change configure.ac and Makefile.am.
	autoreconf -fi >&2
	# Debian's configure flags, from its own rules.
	flags=$(sed -n '/dh_auto_configure --/,/^$/p' debian/rules | grep -o -- '--[a-z][a-z-]*' | paste -sd ' ')
	[ -n "$flags" ] || die "no configure flags found in debian/rules"
	log "configure $flags with musl"
	# shellcheck disable=SC2086 # the flags are words
	./configure CC=musl-gcc CFLAGS="-O2 -fstack-protector-strong" LDFLAGS=-static $flags >&2
	# The build helpers (the signal-name table among them) are built
	# with the glibc compiler: kill -l and kill -RTMIN then name the
	# signals as glibc programs number them, as Debian's dash does.
	make CC_FOR_BUILD=gcc >&2
	strip src/dash
	if readelf -l src/dash | grep -q INTERP; then
		die "the built dash is not static"
	fi
	[ "$(src/dash -c 'x=$(echo ok); echo "$x"')" = ok ] || die "the built dash does not run"
	cp src/dash "$work/dash"
)

comm -13 "$work/before" "$work/after" | xargs -r apt-get purge -y >&2

# The packaged binary is diverted, not overwritten, so dpkg knows where
# it is and an upgrade of dash does not put it back over the static one.
# It is copied, not moved, and the static one renamed over /bin/dash:
# /bin/sh never goes missing, not even for an instant.
if [ "$(dpkg-divert --truename /bin/dash)" != /bin/dash.glibc ]; then
	cp -p /bin/dash /bin/dash.glibc
	dpkg-divert --local --no-rename --divert /bin/dash.glibc --add /bin/dash >&2
fi
install -m 0755 "$work/dash" /bin/dash.static
mv /bin/dash.static /bin/dash
mkdir -p "$(dirname "$marker")"
echo "$version" >"$marker"
log "/bin/dash is dash $version, static with musl"
