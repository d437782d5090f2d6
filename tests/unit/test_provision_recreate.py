"""provision_recreate of a machine that holds the cluster's state (a master, the hub, a ZooKeeper
server...) needs its name in provision_recreate_confirm; a plain worker (replace_worker.yml's case)
needs nothing. Real ansible-playbook runs on the controller only, with the lab provider: the check
runs before any container or cloud call (tests/cloud prove the same for GCP's calls)."""

import json
import os
import pathlib
import subprocess
import sys

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
ANSIBLE_PLAYBOOK = pathlib.Path(sys.executable).parent / "ansible-playbook"

pytestmark = pytest.mark.skipif(not ANSIBLE_PLAYBOOK.exists(), reason="ansible-playbook is not installed beside this Python")

# The provision playbook's first play alone: the role's checks, nothing after them.
CHECK = """
- name: Provision's checks
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Check the request
      ansible.builtin.include_role:
        name: sparkfleet.cluster.provision
        tasks_from: validate
"""


def _run(tmp_path, playbook, *extra):
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {
        "vars": {"sparkfleet_provider": "lab", "sparkfleet_cluster_name": "unit"},
        "children": {
            "spark_masters": {"hosts": {"m1": local}},
            "livy": {"hosts": {"m1": local}},
            "hub": {"hosts": {"h1": local}},
            "swarm_managers": {"hosts": {"h1": local}},
            "spark_workers": {"hosts": {"w1": local, "w2": local}},
            "zookeeper": {"hosts": {"w2": local}},
        }}}))
    cfg = tmp_path / "ansible.cfg"
    cfg.write_text("[defaults]\n")
    env = dict(os.environ, ANSIBLE_CONFIG=str(cfg), ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1",
               ANSIBLE_COLLECTIONS_PATH=str(ROOT / "collections"), ANSIBLE_LOCALHOST_WARNING="false")
    done = subprocess.run([str(ANSIBLE_PLAYBOOK), "-i", str(inventory), str(playbook), "-e", "provision_recreate=true",
                           *extra], env=env, capture_output=True, text=True, timeout=300, check=False)
    return done, " ".join((done.stdout + done.stderr).split())


@pytest.mark.parametrize("only, confirm, refused", [
    ("m1,w1", "", "m1 (spark_masters, livy)"),
    ("w2", "", "w2 (zookeeper)"),
    ("h1,m1", "m1", "h1 (hub, swarm_managers)"),
])
def test_a_machine_holding_state_is_refused_before_anything_runs(tmp_path, only, confirm, refused):
    done, out = _run(tmp_path, ROOT / "playbooks" / "provision.yml", "-e", json.dumps({"provision_only": only.split(",")}),
                     "-e", f"provision_recreate_confirm={confirm}")
    assert done.returncode != 0
    assert f"provision_recreate deletes the disks of {refused}, which hold the cluster's state." in out
    named = ",".join(([confirm] if confirm else []) + [refused.split()[0]])
    assert f"confirm each by name: -e provision_recreate_confirm={named}" in out
    assert "Remove the lab containers" not in out and "Lab containers" not in out


@pytest.mark.parametrize("only, confirm", [
    ("w1", ""),                       # replace_worker.yml's case: a plain worker
    ("m1,w1", "m1"),
    ("h1,w2,m1", " m1, h1,w2 "),
    ("h1,m1", ["m1", "h1"]),
])
def test_a_plain_worker_or_the_named_machines_pass(tmp_path, only, confirm):
    (tmp_path / "check.yml").write_text(CHECK)
    done, out = _run(tmp_path, tmp_path / "check.yml",
                     "-e", json.dumps({"provision_only": only.split(","), "provision_recreate_confirm": confirm}))
    assert done.returncode == 0, out[-3000:]
    assert "Check that each machine holding state to recreate is confirmed by name" in out
