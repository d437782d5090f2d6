#!/usr/bin/env bash
# ansible-test sanity on the collection exactly as it is published: built from
# this checkout (galaxy.yml's build_ignore applies), installed under a temporary
# <tmp>/ansible_collections/<namespace>/<name>, and tested there, since
# ansible-test only runs inside such a tree.
#
# Runs without the hosts ansible-test normally downloads from: its pip
# bootstrap script is replaced by one that uses the interpreter's own ensurepip
# (the sanity tests' pinned requirements still come from the package index).
#
#   bash scripts/sanity.sh                 every sanity test ansible-test selects
#   bash scripts/sanity.sh --test pep8     extra arguments go to ansible-test
#
# Environment: VENV (default ./.venv), SANITY_PYTHON (default 3.11),
# SANITY_KEEP=1 keeps the temporary tree (its path is printed).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
case "$VENV" in /*) ;; *) VENV="$ROOT/$VENV" ;; esac
PYVER="${SANITY_PYTHON:-3.11}"

if [[ -x "$VENV/bin/ansible-test" ]]; then
  export PATH="$VENV/bin:$PATH"
fi
for tool in ansible-galaxy ansible-test "python$PYVER"; do
  command -v "$tool" >/dev/null || { echo "sanity: $tool not found (run 'make venv' first)" >&2; exit 2; }
done
export ANSIBLE_FORCE_COLOR=0 PY_COLORS=0 NO_COLOR=1

start=$(date +%s)
work="$(mktemp -d "${TMPDIR:-/tmp}/sparkfleet-sanity.XXXXXX")"
if [[ "${SANITY_KEEP:-0}" == 1 ]]; then
  echo "sanity: keeping $work"
else
  trap 'rm -rf "$work"' EXIT
fi
# Neither ansible-galaxy nor ansible-test may pick up the project's ansible.cfg
# (the lab's inventory, roles and collections paths): an empty one instead.
: >"$work/ansible.cfg"
export ANSIBLE_CONFIG="$work/ansible.cfg"

collection="$("python$PYVER" - "$ROOT/galaxy.yml" <<'EOF'
import sys
import yaml
with open(sys.argv[1], encoding="utf-8") as f:
    meta = yaml.safe_load(f)
print(meta["namespace"], meta["name"])
EOF
)"
read -r namespace name <<<"$collection"

echo "=== build $namespace.$name from $ROOT"
ansible-galaxy collection build --output-path "$work/build" "$ROOT" >/dev/null
tarball=("$work/build/$namespace-$name"-*.tar.gz)
# --no-deps: the dependencies are not needed by sanity tests, and Galaxy is
# not reachable from every machine.
ansible-galaxy collection install --no-deps --force -p "$work" "${tarball[0]}" >/dev/null
coll="$work/ansible_collections/$namespace/$name"
[[ -f "$coll/MANIFEST.json" ]] || { echo "sanity: install did not produce $coll" >&2; exit 2; }
echo "=== installed $(basename "${tarball[0]}") into $coll"

# ansible-test bootstraps pip in each sanity virtualenv with get-pip.py from a
# download host, unless ~/.ansible/test/cache/get_pip_<pip version>.py exists.
# Serve it from ensurepip instead (the pip version is ansible-test's own pin).
pip_version="$("python$PYVER" - "$PYVER" <<'EOF'
import sys
import types
from ansible_test._internal.python_requirements import get_venv_packages
print(get_venv_packages(types.SimpleNamespace(version=sys.argv[1]))["pip"])
EOF
)"
cache_dir="$HOME/.ansible/test/cache"
get_pip="$cache_dir/get_pip_${pip_version//./_}.py"
if [[ ! -s "$get_pip" ]]; then
  mkdir -p "$cache_dir"
  printf '%s\n' \
    '# Offline stand-in for get-pip.py written by sparkfleet scripts/sanity.sh: pip from ensurepip.' \
    'import ensurepip' \
    'ensurepip.bootstrap(upgrade=True)' >"$get_pip"
  echo "=== pip bootstrap for ansible-test served by ensurepip: $get_pip"
fi

# Tests that need a tool this machine cannot have are skipped, each with a reason.
skips=()
skipped=()
skip() { skips+=(--skip-test "$1"); skipped+=("$1"); echo "=== skip $1: $2"; }
if ! command -v pwsh >/dev/null; then
  # With no PowerShell file pslint has nothing to check and passes without pwsh.
  if [[ -n "$(find "$coll" -type f \( -name '*.ps1' -o -name '*.psm1' -o -name '*.psd1' \) -print -quit)" ]]; then
    skip pslint "PowerShell (pwsh) is not installed (neither Debian nor PyPI packages it)"
  fi
fi
if ! command -v shellcheck >/dev/null && [[ $EUID -eq 0 ]] && command -v apt-get >/dev/null; then
  echo "=== installing shellcheck (Debian package)"
  export DEBIAN_FRONTEND=noninteractive
  "$ROOT/scripts/apt-get.sh" install -y -q shellcheck >/dev/null 2>&1 \
    || { "$ROOT/scripts/apt-get.sh" update -q >/dev/null 2>&1 && "$ROOT/scripts/apt-get.sh" install -y -q shellcheck >/dev/null 2>&1; } \
    || true
fi
if ! command -v shellcheck >/dev/null; then
  skip shellcheck "shellcheck is not installed and could not be (apt-get install shellcheck needs root)"
fi

echo "=== ansible-test sanity --local --python $PYVER --color no ${skips[*]} $*"
log="$work/sanity.log"
set +e
(cd "$coll" && ansible-test sanity --local --python "$PYVER" --color no "${skips[@]}" "$@") 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e

# ansible-test prints 'Running sanity test "NAME"' per test run and, on failure,
# 'FATAL: The N sanity test(s) listed below (out of M) failed.' then the names.
ran=$(sed -nE 's/^Running sanity test "([^"]+)".*/\1/p' "$log" | sort -u)
failed=$(sed -n '/^FATAL: The [0-9]* sanity test(s) listed below/,$p' "$log" | grep -E '^[a-z0-9][a-z0-9.-]*$' || true)
n_ran=$(grep -c . <<<"$ran" || true)
n_failed=$(grep -c . <<<"$failed" || true)
echo
echo "=== sanity summary ($(( $(date +%s) - start ))s, ansible-test exit $rc)"
echo "    ran:     $(xargs <<<"$ran")"
[[ $n_failed -eq 0 ]] || echo "    failed:  $(xargs <<<"$failed")"
[[ ${#skipped[@]} -eq 0 ]] || echo "    skipped: ${skipped[*]} (reasons above)"
echo "sanity: $(( n_ran - n_failed )) passed, $n_failed failed, ${#skipped[@]} skipped"
exit "$rc"
