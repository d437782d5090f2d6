#!/usr/bin/env bash
# Make sure a Docker engine answers on this machine: install Debian's docker.io
# when dockerd is missing, start dockerd when it is not running (no systemd
# needed), and wait until it is ready. Idempotent; prints what it did.
set -euo pipefail
log=${SPARKFLEET_DOCKERD_LOG:-/var/log/sparkfleet-dockerd.log}

if ! command -v dockerd >/dev/null 2>&1; then
  echo "docker: installing docker.io from Debian"
  export DEBIAN_FRONTEND=noninteractive
  "$(dirname "$0")/apt-get.sh" update -qq
  "$(dirname "$0")/apt-get.sh" install -y -qq docker.io >/dev/null
fi

if docker info >/dev/null 2>&1; then
  echo "docker: engine is running ($(docker version --format '{{.Server.Version}}'))"
  exit 0
fi

if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
  systemctl start docker || true
fi
if ! docker info >/dev/null 2>&1; then
  echo "docker: starting dockerd (log: $log)"
  # Its own session: dockerd must outlive the shell (and process group) that started it.
  setsid nohup dockerd >>"$log" 2>&1 </dev/null &
fi
for _ in $(seq 1 60); do
  if docker info >/dev/null 2>&1; then
    echo "docker: engine is ready ($(docker version --format '{{.Server.Version}}'))"
    exit 0
  fi
  sleep 1
done
echo "docker: dockerd did not become ready in 60s; last lines of $log:" >&2
tail -n 20 "$log" >&2 || true
exit 1
