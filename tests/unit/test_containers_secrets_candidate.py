"""The secrets role's `secrets_candidate`: a value the caller computed (the pki role's CA)
is kept only when no source has the secret, and never replaces the cluster's copy.

Runs the role with ansible-playbook on localhost (holder and controller at once), with the
cluster copy and the controller cache in a temporary directory.
"""

import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]

PLAY = """
- name: The secrets role with a candidate
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Read or keep the secret
      ansible.builtin.include_role:
        name: sparkfleet.cluster.secrets
      vars:
        secrets_name: probe
        secrets_fact: probe_value
        secrets_holders: [localhost]
        secrets_candidate: "{{ candidate }}"
        secrets_store_dir: "{{ store }}"
        secrets_cache_dir: "{{ cache }}"
    - name: Show the value
      ansible.builtin.debug:
        msg: "VALUE=<{{ probe_value }}>"
"""

INVENTORY = {"all": {"hosts": {"localhost": {
    "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
    # The role reads the holders' copy with become; root needs no password for su.
    "ansible_become_method": "su"}}}}


def run(tmp_path, candidate, **extra):
    (tmp_path / "hosts.yml").write_text(json.dumps(INVENTORY))
    (tmp_path / "play.yml").write_text(PLAY)
    variables = {"candidate": candidate, "store": str(tmp_path / "store"), "cache": str(tmp_path / "cache"), **extra}
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1",
               ANSIBLE_CACHE_PLUGIN="memory", ANSIBLE_COLLECTIONS_PATH=str(ROOT / "collections"))
    result = subprocess.run(
        [str(pathlib.Path(sys.executable).with_name("ansible-playbook")), "-i", str(tmp_path / "hosts.yml"),
         "-e", json.dumps(variables), str(tmp_path / "play.yml")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    return out.split("VALUE=<", 1)[1].split(">", 1)[0]


def test_candidate_is_used_once_then_the_cluster_copy_wins(tmp_path):
    if os.geteuid() != 0:
        import pytest
        pytest.skip("the role keeps the holders' copy as root (become); run as root")
    assert run(tmp_path, "first-candidate") == "first-candidate"
    store = tmp_path / "store" / "probe"
    cache = tmp_path / "cache" / "probe"
    assert store.read_text() == "first-candidate"
    assert oct(store.stat().st_mode & 0o777) == "0o600"
    assert oct(cache.stat().st_mode & 0o777) == "0o600"
    # A later run computes another candidate: the cluster's copy wins, nothing is replaced.
    assert run(tmp_path, "second-candidate") == "first-candidate"
    # A rebuilt holder (copy gone): the controller's cache brings the value back, not the candidate.
    store.unlink()
    assert run(tmp_path, "third-candidate") == "first-candidate"
    assert store.read_text() == "first-candidate"
    # The inventory (a Vault file) is authoritative over everything.
    assert run(tmp_path, "fourth", sparkfleet_secrets={"probe": "from-vault"}) == "from-vault"


def test_without_a_candidate_a_random_secret_is_generated(tmp_path):
    if os.geteuid() != 0:
        import pytest
        pytest.skip("the role keeps the holders' copy as root (become); run as root")
    value = run(tmp_path, "", secrets_length=24)
    assert len(value) == 24 and value.isalnum()
