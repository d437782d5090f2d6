#!/bin/sh
# Garbage collection of the registry's storage (sparkfleet-registry-gc.service, on a timer):
# manifests no tag names any more and the layers nothing uses are deleted. The registry is stopped
# meanwhile (it accepts no push while the collection runs) and started again whatever the
# collection answered; the exit status is the collection's (or 1 when the start failed).
# Usage: sparkfleet-registry-gc <config.yml> <unit>
set -u
config=${1:?usage: $0 CONFIG UNIT}
unit=${2:?usage: $0 CONFIG UNIT}
systemctl stop "$unit" || exit 1
rc=0
runuser -u docker-registry -- docker-registry garbage-collect --delete-untagged "$config" || rc=$?
systemctl start "$unit" || rc=1
exit "$rc"
