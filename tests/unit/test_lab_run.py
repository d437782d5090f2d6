"""tests/lab/run's opening, with docker and ansible-playbook stood in for: on a clean engine it goes
straight to make lab's first playbook, and a lab already running is removed first. The clean
engine is the case to watch: there the leftover check's grep finds nothing and exits 1, which under
pipefail would end the script before it starts the lab."""

import os
import pathlib
import shutil
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _run_lab_test(tmp_path, running):
    # A copy of the script under <tmp>/tests/lab: it works from two levels up, so its logs land there.
    (tmp_path / "tests" / "lab").mkdir(parents=True)
    shutil.copy(ROOT / "tests" / "lab" / "run", tmp_path / "tests" / "lab" / "run")
    fake = tmp_path / "bin"
    fake.mkdir()
    calls = tmp_path / "calls"
    (fake / "docker").write_text(
        "#!/bin/sh\n"
        f'echo "docker $*" >> {calls}\n'
        # `docker ps -a --filter label=... --format ...` lists the running lab's containers.
        f'if [ "$1" = ps ]; then printf "{running}"; fi\n'
    )
    # make lab's first playbook fails: the test is about what happens before it.
    (fake / "ansible-playbook").write_text(
        "#!/bin/sh\n"
        f'echo "ansible-playbook $*" >> {calls}\n'
        'case "$*" in *bake.yml*) exit 3;; esac\n'
    )
    for tool in ("docker", "ansible-playbook"):
        (fake / tool).chmod(0o755)
    env = dict(os.environ, PATH=f"{fake}:{os.environ['PATH']}", LAB_KEEP="1")
    result = subprocess.run(
        ["bash", str(tmp_path / "tests" / "lab" / "run")], env=env, capture_output=True, text=True, check=False
    )
    return result, calls.read_text().splitlines()


def _playbooks(calls):
    return [c for c in calls if c.startswith("ansible-playbook")]


def test_a_clean_engine_goes_straight_to_make_lab(tmp_path):
    result, calls = _run_lab_test(tmp_path, running="")
    assert result.returncode == 3, result.stderr
    assert "=== lab-test: make lab" in result.stdout
    assert _playbooks(calls) == ["ansible-playbook playbooks/bake.yml"]
    assert not any(c.startswith("docker rm") for c in calls)


def test_a_running_lab_is_removed_first(tmp_path):
    result, calls = _run_lab_test(tmp_path, running="sparkfleet-worker-1\\nsparkfleet-master\\nother-thing\\n")
    assert result.returncode == 3, result.stderr
    assert "remove the lab already running: sparkfleet-master sparkfleet-worker-1" in result.stdout
    assert "docker rm -f sparkfleet-master sparkfleet-worker-1" in calls
    assert _playbooks(calls) == [
        "ansible-playbook playbooks/lab.yml -e lab_state=absent",
        "ansible-playbook playbooks/bake.yml",
    ]
