#!/bin/sh
# Installs an image's packages and finishes its root. It runs as root
# inside the root, from /tmp/sandgate-image/ next to the image's
# packages.txt: as a Dockerfile RUN step, or under chroot in the offline
# build (images/build.sh). Every image runs it, the browser on top of
# base, so each step must be safe to run again. It must stay POSIX sh
# with no tools beyond the essential set and apt, because the debootstrap
# minbase root has no passwd package (no useradd). apt fetches from the
# root's own sources, which must include the security suite.
set -eu

here=$(dirname "$0")

# The packages, with apt's resolver in both builds (debootstrap --include
# would pick the first alternative of every dependency, apt takes one
# already listed). Upgrading first gives the offline root, debootstrapped
# from the release alone, the same fixes as a registry base image.
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get -y upgrade
grep -Ev '^[[:space:]]*(#|$)' "$here/packages.txt" |
	xargs apt-get install -y --no-install-recommends

# What an image installs beyond Debian packages (base: ast-grep), from
# its own install.sh next to packages.txt.
if [ -f "$here/install.sh" ]; then
	sh "$here/install.sh"
fi

# /bin/sh, started by every run_shell call, as a static musl build of
# the same dash (see static-sh.sh for why and how).
sh "$here/static-sh.sh"

# The sandbox user. Sandgate runs every container as 1000:1000
# (sandbox/docker Config.User), so the ids are fixed, not allocated.
owner=$(grep -E '^[^:]*:[^:]*:1000:' /etc/passwd | cut -d: -f1)
if [ -n "$owner" ] && [ "$owner" != sandbox ]; then
	echo "setup.sh: uid 1000 already belongs to $owner" >&2
	exit 1
fi
grep -q '^sandbox:' /etc/group || echo 'sandbox:x:1000:' >>/etc/group
grep -q '^sandbox:' /etc/passwd ||
	echo 'sandbox:x:1000:1000:Sandgate sandbox:/workspace:/bin/bash' >>/etc/passwd
# A locked password: nobody logs in; the runner is started as the user.
if [ -f /etc/shadow ] && ! grep -q '^sandbox:' /etc/shadow; then
	echo 'sandbox:!:19000:0:99999:7:::' >>/etc/shadow
fi
if [ -f /etc/gshadow ] && ! grep -q '^sandbox:' /etc/gshadow; then
	echo 'sandbox:!::' >>/etc/gshadow
fi

# Empty mount points. The gateway mounts tmpfs on /workspace, the runner
# binary under /opt/sandgate and the socket dir on /run/sandgate; the root
# file system is read-only at run time, so they must exist in the image.
mkdir -p /workspace /opt/sandgate /run/sandgate
chown 1000:1000 /workspace
chmod 0755 /workspace

# A font cache that stays valid (images with fontconfig: browser). Image
# layers keep mtimes in whole seconds, so a cache made against a font
# directory's nanosecond mtime would be stale at run time, and Chromium
# or fc-list would write their own under $HOME/.cache, the workspace.
if command -v fc-cache >/dev/null; then
	find /usr/share/fonts /usr/local/share/fonts -type d 2>/dev/null |
		while IFS= read -r dir; do
			touch -c -d "@$(stat -c %Y "$dir")" "$dir"
		done
	fc-cache -s -f
fi

# Nothing a sandbox needs: package caches, lists and logs.
apt-get clean
rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/debconf/*-old
find /var/log -type f -delete
rm -f /etc/machine-id
# The host's name, copied by debootstrap. Under docker build the file is
# a bind mount that cannot be removed and is not committed.
rm -f /etc/hostname 2>/dev/null || true
