#!/bin/sh
# Finishes an image root after its packages are installed. It runs inside
# the root: as a Dockerfile RUN step, or under chroot in the offline build
# (images/build.sh). It must stay POSIX sh with no tools beyond the
# essential set, because the debootstrap minbase root has no passwd
# package (no useradd) and no network.
set -eu

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

# Nothing a sandbox needs: package caches, lists and logs.
apt-get clean
rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/debconf/*-old
find /var/log -type f -delete
rm -f /etc/hostname /etc/machine-id
