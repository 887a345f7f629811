#!/usr/bin/env bash
# userns-engine.sh starts (or stops) a second Docker engine, beside the
# host's own, that remaps user namespaces ("userns-remap": uid 1000 in a
# container is 101000 or so on the host), so that `make test` can run
# the Docker provider's userns tests (TestUsernsRemap, TestConformance)
# against the configuration the README recommends for untrusted work.
#
# It shares nothing with the host's engine: its own data and exec roots,
# its own socket, its own containerd (dockerd starts one under its exec
# root), no bridge and no iptables rules (sandboxes have no network).
# dockerd creates the "dockremap" user and its subordinate id ranges on
# first use. The sandbox image is copied from the host's engine when its
# id differs. The data root is kept between runs, so the copy happens
# once per image build.
#
#   deploy/userns-engine.sh start   # prints the DOCKER_HOST to use
#   deploy/userns-engine.sh stop
set -euo pipefail

name=sandgate-userns
data=/var/lib/$name
exec_root=/run/$name
sock=/run/$name.sock
pidfile=/run/$name.pid
log=/var/log/$name-dockerd.log
image=${SANDGATE_USERNS_IMAGE:-sandgate/base:latest}
host=unix://$sock

say() { printf 'userns-engine: %s\n' "$*" >&2; }
ours() { DOCKER_HOST=$host docker "$@"; }

running() { [ -s "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

start() {
  if [ "$(id -u)" -ne 0 ]; then
    say "starting a second Docker engine needs root"
    exit 1
  fi
  if ! running || ! ours info >/dev/null 2>&1; then
    mkdir -p "$data" "$exec_root"
    say "starting dockerd with userns-remap (log: $log)"
    setsid nohup dockerd --userns-remap=default \
      --data-root "$data" --exec-root "$exec_root" --pidfile "$pidfile" -H "$host" \
      --bridge=none --iptables=false --ip6tables=false --ip-masq=false \
      >"$log" 2>&1 </dev/null &
    for _ in $(seq 1 60); do
      ours info >/dev/null 2>&1 && break
      sleep 1
    done
    if ! ours info >/dev/null 2>&1; then
      say "the userns engine did not come up within 60 s; last lines of its log:"
      tail -n 20 "$log" >&2 || true
      exit 1
    fi
  fi
  if ! ours info --format '{{.SecurityOptions}}' | grep -q 'name=userns'; then
    say "the engine at $host does not remap user namespaces"
    exit 1
  fi
  want=$(docker image inspect --format '{{.Id}}' "$image")
  have=$(ours image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
  if [ "$want" != "$have" ]; then
    say "copying $image from the host's engine"
    docker save "$image" | ours load >/dev/null
  fi
  echo "$host"
}

stop() {
  running || return 0
  pid=$(cat "$pidfile")
  kill "$pid"
  for _ in $(seq 1 30); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 1
  done
  say "dockerd $pid did not stop within 30 s"
  exit 1
}

case "${1:-}" in
start) start ;;
stop) stop ;;
*)
  echo "usage: $0 start|stop" >&2
  exit 2
  ;;
esac
