"""playbooks/status.yml: read-only by construction, and an unreachable cluster is reported in
the table, not a failed run."""

import os
import pathlib
import socket
import subprocess
import sys

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
PLAYBOOK = ROOT / "playbooks" / "status.yml"
READ_ONLY = {"ansible.builtin.service_facts", "ansible.builtin.meta", "ansible.builtin.uri",
             "sparkfleet.cluster.nvidia_gpu_facts", "ansible.builtin.command", "ansible.builtin.debug"}


def _plays():
    return yaml.safe_load(PLAYBOOK.read_text())


def _tasks():
    for play in _plays():
        yield from play.get("tasks", [])


def test_only_reading_modules():
    for task in _tasks():
        modules = {key for key in task if "." in key}
        assert modules <= READ_ONLY, f"{task['name']}: {modules - READ_ONLY}"
        if "ansible.builtin.command" in modules:
            assert task.get("changed_when") is False and task.get("check_mode") is False
        if "ansible.builtin.uri" in modules:
            assert task["ansible.builtin.uri"].get("method", "GET") == "GET"


def test_hosts_play_survives_unreachable_hosts_and_gathers_nothing():
    hosts_play = _plays()[0]
    assert hosts_play["hosts"] == "all"
    assert hosts_play["ignore_unreachable"] is True
    assert hosts_play["gather_facts"] is False
    assert hosts_play["become"] is False


def _closed_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.skipif(not (pathlib.Path(sys.executable).parent / "ansible-playbook").exists(),
                    reason="ansible-playbook is not installed beside this Python")
@pytest.mark.parametrize("masters", [["m1"], ["m1", "m2"]], ids=["one master", "two masters (HA)"])
def test_unreachable_hosts_are_reported_and_the_run_succeeds(tmp_path, masters):
    port = _closed_port()
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {
        "vars": {"ansible_host": "127.0.0.1", "ansible_port": port, "ansible_user": "nobody",
                 "ansible_connection": "ssh",
                 "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"},
        "children": {
            "spark_masters": {"hosts": dict.fromkeys(masters)},
            "spark_workers": {"hosts": {"w1": None, "w2": None}},
        }}}))
    env = dict(os.environ, ANSIBLE_CONFIG=str(tmp_path / "none.cfg"), ANSIBLE_FORCE_COLOR="0", ANSIBLE_CALLBACK_RESULT_FORMAT="yaml",
               ANSIBLE_COLLECTIONS_PATH=str(ROOT / "collections"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_INVENTORY_UNPARSED_WARNING="false")
    (tmp_path / "none.cfg").write_text("[defaults]\n")
    done = subprocess.run([str(pathlib.Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory),
                           str(PLAYBOOK)], env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    # The table is the debug message, a YAML block (result_format yaml), so indented.
    table = [line.strip() for line in done.stdout.splitlines()
             if line.startswith("    ") and line.strip().startswith(("host ", "m1 ", "m2 ", "w1 ", "w2 "))]
    assert len(table) == 3 + len(masters), done.stdout[-3000:]
    assert table[0].split() == ["host", "groups", "reachable", "spark", "worker", "gpus", "swarm", "services", "what",
                                "is", "wrong"]
    assert table[1].split()[:3] == ["m1", "(spark_masters)", "NO"]
    for line in table[1:]:
        assert "  NO  " in line and "unreachable over SSH: connect to host 127.0.0.1" in line
    assert "Swarm: no host in swarm_managers, not checked." in done.stdout
