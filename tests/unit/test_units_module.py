"""sparkfleet.cluster.units (plugins/modules/units.py): what it asks systemd, in which order, run by
ansible-playbook on this machine (connection local). This machine runs no systemd: a stand-in
`systemctl` first on PATH keeps each unit's state in a file and logs every call; a real systemd
answers the same questions in the Molecule scenarios and the lab (the service role runs every daemon
through this module)."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

from conftest import ROOT

ANSIBLE_PLAYBOOK = pathlib.Path(sys.executable).parent / "ansible-playbook"

# The stand-in: `show U --property=ActiveState --value`, `is-enabled U` (rc 0 only when enabled or
# static, as systemd), start/stop/enable/disable/daemon-reload; a unit named bad-* fails to start.
SYSTEMCTL = r'''#!{python}
import json, os, sys
state_file = os.environ["UNITS_STATE"]
state = json.load(open(state_file))
args = sys.argv[1:]
with open(state_file + ".log", "a") as log:
    log.write(" ".join(args) + "\n")
verb, unit = args[0], (args[1] if len(args) > 1 else "")
unit = unit if "." in unit or not unit else unit + ".service"
now = state.setdefault(unit, {{"active": "inactive", "enabled": "disabled"}})
if verb == "show":
    print(now["active"])
elif verb == "is-enabled":
    print(now["enabled"])
    sys.exit(0 if now["enabled"] in ("enabled", "static", "indirect") else 1)
elif verb == "start":
    if unit.startswith("bad-"):
        sys.stderr.write("Job for %s failed because the control process exited with error code.\n" % unit)
        sys.exit(1)
    now["active"] = "active"
elif verb == "stop":
    now["active"] = "inactive"
elif verb in ("enable", "disable"):
    now["enabled"] = verb + "d"
json.dump(state, open(state_file, "w"))
'''

JOURNALCTL = "#!/bin/sh\necho 'bad-daemon[42]: cannot read /etc/bad.conf'\n"


@pytest.fixture
def host(tmp_path):
    """The stand-ins on PATH, an empty unit directory, and a function that sets units' states."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "systemctl").write_text(SYSTEMCTL.format(python=sys.executable))
    (bin_dir / "journalctl").write_text(JOURNALCTL)
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    (tmp_path / "units").mkdir()
    (tmp_path / "state.json").write_text("{}")
    return tmp_path


def given(host, units):
    """Units' states before the call: {unit: (ActiveState, is-enabled's answer)}."""
    (host / "state.json").write_text(json.dumps({name: {"active": a, "enabled": e} for name, (a, e) in units.items()}))


def apply(host, check=False, **args):
    """Run one units task with these arguments: (its result, the systemctl calls it made)."""
    log = host / "state.json.log"
    log.write_text("")
    (host / "play.yml").write_text(json.dumps([{
        "hosts": "localhost", "connection": "local", "gather_facts": False,
        "vars": {"ansible_python_interpreter": sys.executable},
        "tasks": [{"name": "Units.", "sparkfleet.cluster.units": {"path": str(host / "units"), **args}}]}]))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(ROOT / "collections"), ANSIBLE_STDOUT_CALLBACK="json",
               ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_INVENTORY_UNPARSED_WARNING="false",
               PATH=f"{host / 'bin'}{os.pathsep}{os.environ['PATH']}", UNITS_STATE=str(host / "state.json"))
    env.pop("ANSIBLE_CONFIG", None)  # the project's ansible.cfg (make exports it) names the lab
    done = subprocess.run([str(ANSIBLE_PLAYBOOK), "-i", "localhost,", str(host / "play.yml")]
                          + (["--check"] if check else []),
                          cwd=host, env=env, capture_output=True, text=True, check=False)
    assert done.stdout.startswith("{"), done.stderr
    (task,) = json.loads(done.stdout)["plays"][0]["tasks"]
    calls = [line for line in log.read_text().splitlines() if line.split()[0] not in ("show", "is-enabled")]
    return task["hosts"]["localhost"], calls


def test_down_units_are_enabled_and_started_then_nothing_changes(host):
    given(host, {"spark-worker.service": ("inactive", "disabled"), "gc.timer": ("active", "enabled")})
    result, calls = apply(host, started=["spark-worker", "gc.timer"], daemon_reload=True)
    assert result["changed"] and result["started"] == ["spark-worker"] and result["enabled"] == ["spark-worker"]
    assert calls == ["daemon-reload", "enable spark-worker", "start spark-worker"]
    result, calls = apply(host, started=["spark-worker", "gc.timer"])
    assert not result["changed"] and result["started"] == [] and calls == []


def test_a_running_unit_that_is_not_enabled_is_enabled_not_counted_as_started(host):
    given(host, {"docker.service": ("active", "disabled")})
    result, calls = apply(host, started=["docker"])
    assert result["enabled"] == ["docker"] and result["started"] == [] and calls == ["enable docker"]


def test_unwanted_rendered_units_stop_timer_first_and_their_files_go(host):
    units = host / "units"
    for name in ("old.service", "old.timer", "kept.service"):
        (units / name).write_text("[Unit]\n")
    given(host, {"old.service": ("active", "enabled"), "old.timer": ("active", "enabled")})
    result, calls = apply(host, removed=["old", "never-installed"])
    assert calls == ["stop old.timer", "disable old.timer", "stop old.service", "disable old.service", "daemon-reload"]
    assert result["stopped"] == ["old.timer", "old.service"]
    assert result["removed"] == [str(units / "old.service"), str(units / "old.timer")]
    assert sorted(p.name for p in units.iterdir()) == ["kept.service"]
    result, calls = apply(host, removed=["old"])
    assert not result["changed"] and calls == []


def test_a_packaged_unit_is_stopped_and_disabled_where_installed_its_file_kept(host):
    (host / "units" / "docker-registry.service").symlink_to("/dev/null")  # a mask, as a package's unit may be
    given(host, {"docker-registry.service": ("active", "masked")})
    result, calls = apply(host, stopped=["docker-registry", "not-installed-here"])
    assert calls == ["stop docker-registry.service"] and result["stopped"] == ["docker-registry.service"]
    assert (host / "units" / "docker-registry.service").is_symlink() and result["removed"] == []


def test_check_mode_reports_and_does_nothing(host):
    (host / "units" / "old.service").write_text("[Unit]\n")
    given(host, {"old.service": ("active", "enabled")})
    result, calls = apply(host, check=True, started=["spark-worker"], removed=["old"], daemon_reload=True)
    assert result["changed"] and result["started"] == ["spark-worker"] and result["removed"]
    assert calls == [] and (host / "units" / "old.service").exists()


def test_a_unit_that_does_not_start_fails_with_its_journal(host):
    result, calls = apply(host, started=["bad-daemon", "after"])
    assert result["failed"] and calls == ["enable bad-daemon", "start bad-daemon"]
    assert "bad-daemon" in result["msg"] and "cannot read /etc/bad.conf" in result["msg"]
    assert result["enabled"] == ["bad-daemon"]
