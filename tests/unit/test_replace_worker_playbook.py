"""playbooks/replace_worker.yml: what it refuses before anything changes, how it finds dead workers
itself, and that every layer play it narrows really is narrowed. The replacement itself runs on the
lab in `make lab-test` (tests/lab/run)."""

import os
import pathlib
import socket
import subprocess
import sys

import pytest
import yaml

from conftest import RoleRenderer

ROOT = pathlib.Path(__file__).resolve().parents[2]
PLAYBOOK = ROOT / "playbooks" / "replace_worker.yml"
ANSIBLE_PLAYBOOK = pathlib.Path(sys.executable).parent / "ansible-playbook"

pytestmark = pytest.mark.skipif(not ANSIBLE_PLAYBOOK.exists(), reason="ansible-playbook is not installed beside this Python")


def _closed_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _run(tmp_path, *extra, unreachable=(), blip=()):
    """Run the playbook on m1 (master), w1, w2 (workers), n1 (notebook); hosts in `unreachable`
    are SSH hosts on a closed port, hosts in `blip` are that only for the first try (the second
    finds them local), the others local. The provider 'nowhere' makes the provision step stop at
    its own check, so nothing is ever created. The two tries are 1 s apart unless `extra` says."""
    port = _closed_port()
    ssh = {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": port, "ansible_user": "nobody",
           "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"}
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    # Until the first try is registered, SSH to the closed port; then the local connection.
    blipping = {**ssh, "ansible_connection": "{{ 'local' if __replace_ping is defined else 'ssh' }}",
                "ansible_python_interpreter": sys.executable}

    def host(name):
        return ssh if name in unreachable else blipping if name in blip else local

    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {
        "vars": {"sparkfleet_provider": "nowhere", "sparkfleet_cluster_name": "unit",
                 "sparkfleet_credentials_dir": str(tmp_path / "credentials")},
        "children": {
            "spark_masters": {"hosts": {"m1": host("m1")}},
            "spark_workers": {"hosts": {"w1": host("w1"), "w2": host("w2")}},
            "notebook": {"hosts": {"n1": host("n1")}},
        }}}))
    cfg = tmp_path / "ansible.cfg"
    cfg.write_text("[defaults]\n")
    env = dict(os.environ, ANSIBLE_CONFIG=str(cfg), ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1",
               ANSIBLE_COLLECTIONS_PATH=str(ROOT / "collections"), ANSIBLE_LOCALHOST_WARNING="false",
               ANSIBLE_CALLBACK_RESULT_FORMAT="yaml")
    done = subprocess.run([str(ANSIBLE_PLAYBOOK), "-i", str(inventory), str(PLAYBOOK),
                           "-e", "replace_worker_retry_delay=1", *extra],
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    return done, done.stdout + done.stderr


@pytest.mark.parametrize("name", ["m1", "n1", "w9"])
def test_refuses_anything_but_a_worker(tmp_path, name):
    done, out = _run(tmp_path, "-e", f"worker=w1,{name}")
    assert done.returncode != 0
    assert f"Only workers are replaced here: {name} is not among them (workers: w1, w2)" in " ".join(out.split())
    assert "Provision |" not in out and "Replacing" not in out


def test_refuses_both_ways_of_naming_and_neither(tmp_path):
    for extra in (["-e", "worker=w1", "-e", "replace_unreachable=true"], []):
        done, out = _run(tmp_path, *extra)
        assert done.returncode != 0
        assert "Name the workers to replace" in out
        assert "Replacing" not in out


def test_all_workers_answer_nothing_is_replaced(tmp_path):
    done, out = _run(tmp_path, "-e", "replace_unreachable=true")
    assert done.returncode == 0, out[-3000:]
    assert "Every worker answers: nothing to replace." in out
    after = out.split("Every worker answers")[1]
    # No layer play has a host, and no replacement step ran (the provision check is skipped).
    assert "TASK [sparkfleet.cluster." not in after and "Replaced" not in after
    assert "Validating arguments against arg spec" not in after


def test_finds_the_unreachable_worker_itself(tmp_path):
    done, out = _run(tmp_path, "-e", "replace_unreachable=true", unreachable=("w2", "m1"))
    flat = " ".join(out.split())
    assert "Replacing w2 (provider nowhere)." in flat
    # The next step is the provision role's own check, which refuses the unknown provider.
    assert done.returncode != 0
    assert "must be gcp, aws or lab, not 'nowhere'" in flat


def test_a_worker_that_answers_the_second_try_is_kept(tmp_path):
    done, out = _run(tmp_path, "-e", "replace_unreachable=true", blip=("w1",))
    assert done.returncode == 0, out[-3000:]
    assert "fatal: [w1]: UNREACHABLE!" in out and "Try the silent workers a second time" in out
    assert "Every worker answers: nothing to replace." in out and "Replacing" not in out


def test_more_unreachable_workers_than_the_cap_are_refused(tmp_path):
    """Both workers silent twice, cap 1: refused before anything is forgotten or provisioned, with
    the list and the command line that confirms it."""
    done, out = _run(tmp_path, "-e", "replace_unreachable=true", unreachable=("w1", "w2"))
    flat = " ".join(out.split())
    assert done.returncode != 0
    assert "2 worker(s) did not answer twice: w1, w2." in flat
    assert "more than replace_worker_max_unreachable (1)" in flat
    assert (f"ansible-playbook {PLAYBOOK.parent}/replace_worker.yml -i {tmp_path}/hosts.yml "
            "-e replace_unreachable=true -e replace_confirm=w1,w2") in flat
    assert "Replacing" not in flat and "Forget the" not in flat and "Provision |" not in flat


def test_a_confirmation_must_name_exactly_the_silent_workers(tmp_path):
    done, out = _run(tmp_path, "-e", "replace_unreachable=true", "-e", "replace_confirm=w2",
                     unreachable=("w1", "w2"))
    flat = " ".join(out.split())
    assert done.returncode != 0
    assert "replace_confirm names w2, not that list." in flat
    assert "Replacing" not in flat and "Provision |" not in flat


@pytest.mark.parametrize("allow", [["-e", "replace_confirm=w2,w1"], ["-e", "replace_worker_max_unreachable=2"]])
def test_the_confirmed_list_or_a_higher_cap_passes_the_check(tmp_path, allow):
    done, out = _run(tmp_path, "-e", "replace_unreachable=true", *allow, unreachable=("w1", "w2"))
    flat = " ".join(out.split())
    assert "Replacing w1, w2 (provider nowhere)." in flat
    # The next step is the provision role's own check, which refuses the unknown provider.
    assert done.returncode != 0
    assert "must be gcp, aws or lab, not 'nowhere'" in flat


def test_every_layer_play_is_narrowed():
    """With the variables replace_worker.yml imports site.yml with, every layer play selects only the
    hosts its check put in the group to converge (the replacement and the masters that keep it)."""
    converge = [p for p in yaml.safe_load(PLAYBOOK.read_text()) if p.get("ansible.builtin.import_playbook") == "site.yml"]
    assert converge
    components = yaml.safe_load((ROOT / "inventories" / "components.yml").read_text())
    groups = {group: ["m1", "w1", "w2", "n1", "hub1"] for group in components}
    replaced = ["w2", "m1"]
    site = yaml.safe_load((ROOT / "playbooks" / "site.yml").read_text())
    for entry in site:
        layer = entry.get("ansible.builtin.import_playbook")
        plays = yaml.safe_load((ROOT / "playbooks" / layer).read_text()) if layer else [entry]
        # Site's own plays (what the last run left unchanged, the record of this one) and its layers,
        # with the variables site.yml gives them under those replace_worker.yml gives site.yml.
        extra = {**entry.get("vars", {}), **converge[0]["vars"]}
        for play in plays:
            if "hosts" not in play or play["hosts"] == "localhost":  # an import, or a message on the controller
                continue
            inventory = RoleRenderer(groups={**groups, "sparkfleet_replace_converge": replaced}, extra=extra)
            assert set(inventory.play_hosts(play["hosts"])) <= set(replaced), play["name"]
            assert set(RoleRenderer(groups=groups, extra=entry.get("vars", {})).play_hosts(play["hosts"])) > set(replaced), \
                play["name"]
