#!/usr/bin/env bash
# apt-get for the project's own scripts, one at a time: make test installs the Docker engine and the
# base image's tools while the static suites run (sanity may install shellcheck), and two apt-get
# runs at once fail on dpkg's lock. Also waits (up to 10 min) for an apt the machine runs itself.
#   scripts/apt-get.sh ARGS...                      apt-get ARGS under the project's lock
#   scripts/apt-get.sh --update-install PACKAGES... update, then install PACKAGES, under one hold of
#       the lock, so that whoever waits for it (tests/support/headless_chromium.py) sees both end
set -euo pipefail
exec 9>>/var/lock/sparkfleet-apt.lock
flock 9
apt() { apt-get -o DPkg::Lock::Timeout=600 "$@"; }
if [ "${1:-}" = --update-install ]; then
  shift
  apt update -qq
  DEBIAN_FRONTEND=noninteractive apt install -y -qq "$@"
else
  apt "$@"
fi
