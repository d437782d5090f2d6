#!/usr/bin/env bash
# `make molecule`: the Molecule scenarios and the lab test (`lab-test`: tests/lab/run) in two
# lanes that run at the same time.
#   lane 1: the scenarios of $SCENARIOS not in $SIDE_SCENARIOS, in order, output as it comes;
#   lane 2: those in $SIDE_SCENARIOS (each on its own hosts, ports, networks and controller
#           credentials), in order, output to a log printed when done.
# A converge keeps about one of this machine's two cores busy (the other is largely idle during
# converges, more so during the scenarios' waits for jobs, restarts and the idle culler; figures in
# bench/figures.md), so two lanes finish sooner than one. MOLECULE_LANES=1 runs everything in one
# lane, in $SCENARIOS' order.
# Scenarios whose software cannot be downloaded here are skipped with the reason printed (each
# scenario also skips by itself when run directly).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

# A failed scenario does not stop its lane: the others still run, so one run shows every failure.
run_lane() {
  local s start rc=0
  for s in "$@"; do
    case "$s:${SPARKFLEET_ARTIFACT_MIRROR:-}:${SPARKFLEET_MESOS_URL:-}" in
      livy::*) echo "=== scenario $s SKIPPED: SPARKFLEET_ARTIFACT_MIRROR is not set; Livy's release files cannot be downloaded here (roles/livy/README.md)"; continue;;
      mesos:*:) echo "=== scenario $s SKIPPED: SPARKFLEET_MESOS_URL is not set; Mesos ships no current binaries (roles/mesos/README.md)"; continue;;
    esac
    start=$(date +%s)
    if [[ $s == lab-test ]]; then
      echo "=== lab test: tests/lab/run"; bash tests/lab/run
    else
      echo "=== molecule test -s $s"; molecule test -s "$s"
    fi || { echo "=== scenario $s FAILED after $(( $(date +%s) - start ))s"; rc=1; continue; }
    echo "=== scenario $s passed in $(( $(date +%s) - start ))s"
  done
  return $rc
}

# The browser tests (spark_cluster's gateway, the lab test's hub) drive Debian's headless Chromium
# on this machine: installed here when missing, in the background while the lanes start (the first
# browser step comes many minutes later), holding the project's apt lock from the update to the end
# of the install (scripts/apt-get.sh --update-install); each browser step first waits for that lock
# (tests/support/headless_chromium.py). Without Chromium those steps are skipped with their reason.
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  mkdir -p .cache
  echo "=== installing Debian's chromium and chromium-driver for the browser tests, in the background (.cache/chromium-install.log)"
  ( scripts/apt-get.sh --update-install chromium chromium-driver > .cache/chromium-install.log 2>&1 \
      || echo "=== could not install chromium (.cache/chromium-install.log): the browser steps will be skipped with their reason" ) &
fi

read -r -a all <<< "${SCENARIOS:-}"
read -r -a side_names <<< "${SIDE_SCENARIOS:-}"
main=() side=()
for s in "${all[@]}"; do
  if [[ "${MOLECULE_LANES:-2}" != 1 && " ${side_names[*]} " == *" $s "* ]]; then side+=("$s"); else main+=("$s"); fi
done

mkdir -p .cache
rm -f .cache/molecule-lane1.log .cache/molecule-lane2.log
# One lane has nothing to run: the other runs here, its output as it comes (and in lane 1's log).
if (( ${#side[@]} == 0 || ${#main[@]} == 0 )); then
  run_lane "${main[@]}" "${side[@]}" 2>&1 | tee .cache/molecule-lane1.log; exit "${PIPESTATUS[0]}"
fi

side_log=.cache/molecule-lane2.log
echo "=== lane 2 (${side[*]}) runs beside lane 1 (${main[*]:-nothing}); its output: $side_log, printed when it ends"
start=$(date +%s)
run_lane "${side[@]}" > "$side_log" 2>&1 &
side_pid=$!
main_log=.cache/molecule-lane1.log
run_lane "${main[@]}" 2>&1 | tee "$main_log"
main_rc=${PIPESTATUS[0]}
echo "=== lane 1 ended after $(( $(date +%s) - start ))s (exit $main_rc); waiting for lane 2"
wait "$side_pid"; side_rc=$?
echo "=== lane 2 ended after $(( $(date +%s) - start ))s (exit $side_rc); its output follows"
cat "$side_log"
echo "=== lanes: 1 (${main[*]:-nothing}) exit $main_rc; 2 (${side[*]}) exit $side_rc; both ended after $(( $(date +%s) - start ))s"
grep -h '^=== scenario ' "$main_log" "$side_log" || true
(( main_rc == 0 && side_rc == 0 ))
