#!/usr/bin/env bash
# `make test` (CI runs it through .ci/run): every suite, in the least wall time two cores allow.
# The static suites (lint, unit, sanity, cloud: `make static`, no test host needed) run in the
# background at the lowest CPU priority (nice 19) from the start, while the Docker engine is
# installed, the base image built and the Molecule lanes run (`make test-hosts`, `make molecule`):
# they take the CPU the lanes leave idle (waits for jobs, restarts, downloads, image pushes) and
# give it back whenever a converge wants it. Their output goes to .cache/static.log, printed when
# the lanes end; one line says when they ended. The exit is non-zero if any suite failed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
mkdir -p .cache
# make molecule clears them too; here for a run whose test hosts fail and no lane starts (the
# summary at the end must not report an earlier run's scenarios).
rm -f .cache/molecule-lane1.log .cache/molecule-lane2.log
log=.cache/static.log
start=$(date +%s)
# The machine's CPU time (/proc/stat's cpu line: busy and idle jiffies), to report how idle it was.
cpu_now() { awk '/^cpu /{print $2+$3+$4+$7+$8+$9, $5+$6}' /proc/stat; }
read -r busy0 idle0 < <(cpu_now)
echo "=== static suites (lint, unit, sanity, cloud) in the background at nice 19; output: $log, printed at the end"
(
  nice -n 19 make --no-print-directory static > "$log" 2>&1
  rc=$?
  echo "=== static suites ended after $(( $(date +%s) - start ))s (exit $rc)"
  exit $rc
) &
static_pid=$!

hosts_rc=0 molecule_rc=0
make --no-print-directory test-hosts || hosts_rc=$?
if (( hosts_rc == 0 )); then
  echo "=== test hosts ready after $(( $(date +%s) - start ))s: the Molecule lanes start"
  # Said before anything fails on them: containers already running on this engine (a lab left up:
  # lab-test removes it first; the scenarios publish ports of their own, not the lab's).
  running=$(docker ps --format '{{.Names}} ({{.Ports}})' 2>/dev/null | sort)
  [[ -z $running ]] || echo "=== containers already running on this engine:"$'\n'"    ${running//$'\n'/$'\n'    }"
  make --no-print-directory molecule || molecule_rc=$?
else
  echo "=== test hosts FAILED (exit $hosts_rc): no Molecule scenario can run"
fi

wait "$static_pid"; static_rc=$?
echo "=== static suites' output:"
cat "$log"
# CI keeps only the end of this output: the scenarios' results come last, and for a scenario that
# failed, where it first failed (its lane's log keeps the whole of it).
echo "=== scenarios:"
cat .cache/molecule-lane1.log .cache/molecule-lane2.log 2>/dev/null | grep '^=== scenario ' || echo "    (none ran)"
for lane_log in .cache/molecule-lane1.log .cache/molecule-lane2.log; do
  [[ -f $lane_log ]] || continue
  grep -n '^=== scenario .* FAILED' "$lane_log" | while IFS=: read -r end line; do
    begin=$(head -n "$end" "$lane_log" | grep -n -E '^=== (molecule test -s|lab test)' | tail -n 1 | cut -d: -f1)
    # The last error before Molecule's (or the lab test's) first verdict, skipping errors a task
    # ignored; else the verdict itself.
    first=$(awk -v b="${begin:-1}" -v e="$end" '
      NR < b || NR > e { next }
      /\.\.\.ignoring/ { last = before }
      /fatal: |FAILED!|\[ERROR\]|^E +|Traceback/ { before = last; last = NR }
      (/^CRITICAL|^=== lab-test FAILED/) && !verdict { verdict = NR; at = last }
      END { print (verdict ? (at ? at : verdict) : (last ? last : b)) }' "$lane_log")
    name=${line#=== scenario }
    echo "=== scenario ${name%% *}: where it first failed ($lane_log, lines $(( first > 30 ? first - 30 : 1 ))-$(( first + 50 ))):"
    sed -n "$(( first > 30 ? first - 30 : 1 )),$(( first + 50 ))p" "$lane_log"
  done
done
read -r busy1 idle1 < <(cpu_now)
echo "=== CPU over make test: $(( 100 * (idle1 - idle0) / (busy1 - busy0 + idle1 - idle0 + 1) ))% idle on $(nproc) cores"
echo "=== make test after $(( $(date +%s) - start ))s: static suites exit $static_rc, test hosts exit $hosts_rc, Molecule lanes exit $molecule_rc"
(( static_rc == 0 && hosts_rc == 0 && molecule_rc == 0 ))
