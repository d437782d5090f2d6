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


def play(tmp_path, candidate, host=None, **extra):
    """The play's result and output; `host` adds to localhost's inventory variables."""
    (tmp_path / "hosts.yml").write_text(json.dumps(
        {"all": {"hosts": {"localhost": {**INVENTORY["all"]["hosts"]["localhost"], **(host or {})}}}}))
    (tmp_path / "play.yml").write_text(PLAY)
    variables = {"candidate": candidate, "store": str(tmp_path / "store"), "cache": str(tmp_path / "cache"), **extra}
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1",
               ANSIBLE_CACHE_PLUGIN="memory", ANSIBLE_COLLECTIONS_PATH=str(ROOT / "collections"))
    result = subprocess.run(
        [str(pathlib.Path(sys.executable).with_name("ansible-playbook")), "-i", str(tmp_path / "hosts.yml"),
         "-e", json.dumps(variables), str(tmp_path / "play.yml")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    return result, result.stdout + result.stderr


def run(tmp_path, candidate, **extra):
    result, out = play(tmp_path, candidate, **extra)
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


def _refused(tmp_path, candidate, host=None, **extra):
    result, out = play(tmp_path, candidate, host, **extra)
    flat = " ".join(out.split())
    assert result.returncode != 0, out
    assert "VALUE=<" not in out and "Keep the secret on the cluster" not in out
    return flat


def test_a_holder_that_cannot_be_read_stops_the_run(tmp_path):
    """A read that fails (here the store's directory is a file: the module cannot stat the copy)
    is not "no copy": no value is invented, nothing is written, the message names the holder, the
    file and the error. It stops the run also when the controller's cache has the value."""
    if os.geteuid() != 0:
        import pytest
        pytest.skip("the role keeps the holders' copy as root (become); run as root")
    (tmp_path / "store").write_text("not a directory")
    flat = _refused(tmp_path, "candidate-4f9Q")
    assert f"probe: the copy in {tmp_path}/store/probe could not be read on localhost (Cannot read" in flat
    assert "Not a directory" in flat and "A holder that cannot be read is not a holder without a copy" in flat
    assert "candidate-4f9Q" not in flat
    assert not (tmp_path / "cache").exists()
    # With the value in the controller's cache, the run still cannot prove it is the cluster's.
    (tmp_path / "cache").mkdir(mode=0o700)
    (tmp_path / "cache" / "probe").write_text("cached-value")
    flat = _refused(tmp_path, "candidate-4f9Q")
    assert "could not be read on localhost" in flat and "cached-value" not in flat
    assert (tmp_path / "store").read_text() == "not a directory"


def test_a_failed_privilege_escalation_stops_the_run(tmp_path):
    """The holder answers but the privilege escalation fails (here Ansible cannot hand its files to
    a become user that does not exist; a missing sudo password fails the same step): refused with
    that error, nothing invented, nothing written."""
    if os.geteuid() != 0:
        import pytest
        pytest.skip("su to another user needs no password only as root")
    flat = _refused(tmp_path, "candidate-4f9Q", {"ansible_become_user": "sparkfleet-no-such-user"})
    assert "probe: the copy in" in flat and "could not be read on localhost (" in flat
    assert "candidate-4f9Q" not in flat
    assert not (tmp_path / "store").exists() and not (tmp_path / "cache").exists()
