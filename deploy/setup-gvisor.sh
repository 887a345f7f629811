#!/usr/bin/env bash
# setup-gvisor.sh registers gVisor's runsc as a runtime of the host's
# Docker engine, with checkpoints on, so that a gateway started with
# `--runtime runsc` runs its sandboxes under gVisor and pauses them with
# their memory. `make test` calls it (the Docker tier tests memory
# pauses); `make run` does not need it.
#
# runsc is the one the local Kubernetes tier builds from the Go module
# proxy (deploy/kubernetes/local/build.sh, cached: ~8.5 min cold, once per
# machine), installed as /usr/local/lib/sandgate/runsc. The engine gets, in
# /etc/docker/daemon.json (merged, nothing else changed):
#   "experimental": true       checkpoint and restore
#   "runtimes": {"runsc": {"path": ..., "runtimeArgs": ["--host-uds=all"]}}
# --host-uds=all lets the runner listen on its socket in the bind-mounted
# socket dir, as under runc. A running engine is restarted once when the
# file changed (containers stop; paused sandboxes keep their files).
# Safe to run repeatedly.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'setup-gvisor: %s\n' "$*" >&2; }

dest=/usr/local/lib/sandgate/runsc
conf=/etc/docker/daemon.json
if [ "$(id -u)" -ne 0 ]; then
  say "registering runsc in the Docker engine needs root; run: sudo $0"
  exit 1
fi

built=$(deploy/kubernetes/local/build.sh)
if ! cmp -s "$built/bin/runsc" "$dest" 2>/dev/null; then
  mkdir -p "$(dirname "$dest")"
  # A new file renamed over the old: sandboxes running the old one keep it.
  install -m 0755 "$built/bin/runsc" "$dest.new"
  mv -f "$dest.new" "$dest"
  say "installed $dest"
fi

changed=$(python3 - "$conf" "$dest" <<'PY'
import json, os, sys
path, runsc = sys.argv[1], sys.argv[2]
try:
    with open(path) as f:
        conf = json.load(f)
except FileNotFoundError:
    conf = {}
want = {"path": runsc, "runtimeArgs": ["--host-uds=all"]}
if conf.get("experimental") is True and conf.get("runtimes", {}).get("runsc") == want:
    print("no")
    sys.exit(0)
conf["experimental"] = True
conf.setdefault("runtimes", {})["runsc"] = want
os.makedirs(os.path.dirname(path), exist_ok=True)
tmp = path + ".sandgate-new"
with open(tmp, "w") as f:
    json.dump(conf, f, indent=2)
    f.write("\n")
os.replace(tmp, path)
print("yes")
PY
)

if [ "$changed" = yes ] && docker info >/dev/null 2>&1; then
  say "$conf changed: restarting the Docker engine"
  if command -v systemctl >/dev/null 2>&1 && systemctl is-system-running >/dev/null 2>&1; then
    systemctl restart docker
  else
    pid=$(pidof dockerd || true)
    if [ -n "$pid" ]; then
      kill $pid
      for _ in $(seq 1 60); do kill -0 $pid 2>/dev/null || break; sleep 1; done
    fi
  fi
fi
deploy/setup-host.sh # starts the engine if it is not running
if ! docker info --format '{{json .Runtimes}}' | grep -q '"runsc"'; then
  say "the Docker engine does not list runsc after the restart; see $conf and /var/log/sandgate-dockerd.log"
  exit 1
fi
say "runsc is a runtime of the Docker engine (checkpoints on)"
