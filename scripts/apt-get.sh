#!/usr/bin/env bash
# apt-get for the project's own scripts, one at a time: make test installs the Docker engine and the
# base image's tools while the static suites run (sanity may install shellcheck), and two apt-get
# runs at once fail on dpkg's lock. Also waits (up to 10 min) for an apt the machine runs itself.
set -euo pipefail
exec flock /var/lock/sparkfleet-apt.lock apt-get -o DPkg::Lock::Timeout=600 "$@"
