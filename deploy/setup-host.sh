#!/usr/bin/env bash
# setup-host.sh makes a Debian host ready to build and run Sandgate:
# the Docker engine (dockerd, running), debootstrap for offline image
# builds, docker-compose for the compose deployment, and Go; and for the
# tests, git (its http-backend and upload-pack serve the egress tests'
# clones), curl and python3 (the in-process provider's tests run tools
# on the host), and xfsprogs (snapshots' copy-on-write path is tested
# on an XFS volume). It installs
# only what is missing; as a non-root user it prints the command to run
# instead. Safe to run repeatedly; `make run` and `make test` call it.
set -euo pipefail

say() { printf 'setup: %s\n' "$*" >&2; }

missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
command -v docker-compose >/dev/null 2>&1 || missing+=(docker-compose)
command -v go >/dev/null 2>&1 || [ -x /usr/local/go/bin/go ] || missing+=(golang-go)
[ -x /usr/lib/git-core/git-http-backend ] || missing+=(git)
command -v curl >/dev/null 2>&1 || missing+=(curl)
[ -s /etc/ssl/certs/ca-certificates.crt ] || missing+=(ca-certificates) # the gateway image carries the bundle (images/gateway)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
# mkfs.xfs: the snapshot tests' copy-on-write path (an XFS volume with reflink).
command -v mkfs.xfs >/dev/null 2>&1 || [ -x /usr/sbin/mkfs.xfs ] || [ -x /sbin/mkfs.xfs ] || missing+=(xfsprogs)

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    say "missing packages: ${missing[*]}"
    say "run: sudo apt-get update && sudo apt-get install -y ${missing[*]}"
    exit 1
  fi
  say "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Start the engine if nothing answers. On machines without systemd (CI
# containers, this kind of VM) dockerd is started directly in the
# background; its log goes to /var/log/sandgate-dockerd.log.
if ! docker info >/dev/null 2>&1; then
  if [ "$(id -u)" -ne 0 ]; then
    say "the Docker engine is not running and you are not root"
    say "run: sudo systemctl start docker   (or: sudo dockerd &)"
    exit 1
  fi
  if command -v systemctl >/dev/null 2>&1 && systemctl is-system-running >/dev/null 2>&1; then
    say "starting docker with systemctl"
    systemctl start docker
  else
    say "starting dockerd in the background (log: /var/log/sandgate-dockerd.log)"
    setsid nohup dockerd >/var/log/sandgate-dockerd.log 2>&1 < /dev/null &
  fi
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    sleep 1
  done
  if ! docker info >/dev/null 2>&1; then
    say "dockerd did not come up within 60 s; last lines of its log:"
    tail -n 20 /var/log/sandgate-dockerd.log >&2 || true
    exit 1
  fi
fi
say "docker engine $(docker version --format '{{.Server.Version}}' 2>/dev/null) is running"
