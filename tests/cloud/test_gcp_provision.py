"""The GCP provisioning tasks (provision, scale, a replacement, teardown), offline.

The google.cloud modules hard-code Google's URLs and offer no endpoint override, so they
cannot be pointed at a local server. The playbooks run for real, with stand-ins in the
modules' place (tests/cloud/gcp_module_standin.py): each validates its arguments against
the REAL module's documented options, records them, and keeps the instances and firewall
rules it was asked for, answering with the recorded Compute API instance resource. The
tests then assert the arguments the tasks passed and what a second run does.

    pytest -q tests/cloud/test_gcp_provision.py
"""

import json
import os
import pathlib
import re
import subprocess
import sys

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(sys.executable).parent
FIXTURES = ROOT / "tests" / "fixtures" / "gcp"
CLUSTER = "sparkfleet-gcp"  # inventories/gcp: the filter and sparkfleet_cluster_name
PROJECT, ZONE, ADMIN = "my-project", "us-central1-a", "198.51.100.7/32"
DEFAULTS = yaml.safe_load((ROOT / "roles/provision/defaults/main.yml").read_text())
MODULES = ("gcp_compute_instance", "gcp_compute_instance_info", "gcp_compute_firewall")


def _real_modules():
    # Found on sys.path, not imported: an import outside Ansible's collection loader would
    # break later in-process loads of the collection (test_cloud_gcp_inventory.py).
    for entry in sys.path:
        modules = pathlib.Path(entry) / "ansible_collections" / "google" / "cloud" / "plugins" / "modules"
        if (modules / "gcp_compute_instance.py").exists():
            return modules
    return pytest.skip("the google.cloud collection is not installed (the ansible bundle carries it)")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    real = _real_modules()
    base = tmp_path_factory.mktemp("gcp")
    collection = base / "collections" / "ansible_collections" / "google" / "cloud"
    (collection / "plugins" / "modules").mkdir(parents=True)
    (collection / "meta").mkdir()
    (collection / "meta" / "runtime.yml").write_text(yaml.safe_dump({"requires_ansible": ">=2.16", "action_groups": {"gcp": list(MODULES)}}))
    source = (ROOT / "tests" / "cloud" / "gcp_module_standin.py").read_text()
    for name in MODULES:
        (collection / "plugins" / "modules" / f"{name}.py").write_text("#!/usr/bin/python\n" + source.replace("__MODULE__", name))
    state = base / "state"
    state.mkdir()
    # A machine of another cluster in the same zone: nothing may touch it.
    other = json.loads((FIXTURES / "instance.json").read_text())
    other.update({"name": "other-worker-1", "labels": {"sparkfleet-cluster": "other", "sparkfleet-role": "worker"}})
    (state / "instances.json").write_text(json.dumps({"other-worker-1": other}))
    home = base / "home"
    home.mkdir()
    env = dict(os.environ)
    env.update({
        "HOME": str(home),
        "PATH": f"{BIN}:{env.get('PATH', '')}",
        "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
        "ANSIBLE_COLLECTIONS_PATH": f"{base / 'collections'}:{ROOT / 'collections'}",
        "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(home / "facts"),
        "ANSIBLE_NOCOLOR": "1",
        # Project and zone from the usual environment variables.
        "GCP_PROJECT": PROJECT,
        "GCP_ZONE": ZONE,
        "GCP_AUTH_KIND": "application",
        "SPARKFLEET_GCP_REAL_MODULES": str(real),
        "SPARKFLEET_GCP_FIXTURES": str(FIXTURES),
        "SPARKFLEET_GCP_STANDIN_DIR": str(state),
    })
    extra = base / "extra.json"
    extra.write_text(json.dumps({
        "provision_admin_cidrs": [ADMIN],
        "provision_workers": 2,
        "provision_gpu_workers": 1,
        "provision_spot_roles": ["worker"],
        "provision_wait_for_connection": False,
    }))
    return {"env": env, "state": state, "extra": extra}


def _run(world, playbook, *args):
    (world["state"] / "calls.jsonl").write_text("")
    cmd = [str(BIN / "ansible-playbook"), f"playbooks/{playbook}", "-i", "inventories/gcp", "-e", f"@{world['extra']}", *args]
    result = subprocess.run(cmd, cwd=ROOT, env=world["env"], capture_output=True, text=True, timeout=600, check=False)
    print(result.stdout[-6000:], result.stderr[-3000:])
    calls = [json.loads(line) for line in (world["state"] / "calls.jsonl").read_text().splitlines()]
    return result, calls


def _changed(stdout):
    match = re.search(r"^localhost\s+:\s+ok=\d+\s+changed=(\d+)\s+unreachable=0\s+failed=0", stdout, re.M)
    assert match, "the run failed"
    return int(match.group(1))


def _instances(world):
    return json.loads((world["state"] / "instances.json").read_text())


def _creates(calls):
    return [c["params"] for c in calls if c["module"] == "gcp_compute_instance" and c["params"]["state"] == "present"]


def _ports(spec):
    return [{"ip_protocol": p["protocol"], "ports": p["ports"]} for p in spec]


def test_a_refuses_an_open_admin_range_before_any_call(world):
    result, calls = _run(world, "provision.yml", "-e", '{"provision_admin_cidrs": ["0.0.0.0/0"]}')
    assert result.returncode != 0 and "provision_admin_cidrs" in result.stdout
    assert calls == []


def test_b_provision_passes_the_expected_arguments(world):
    result, calls = _run(world, "provision.yml")
    assert result.returncode == 0 and _changed(result.stdout) > 0
    assert all(c["auth_kind"] == "application" and c["params"]["project"] == PROJECT for c in calls)
    created = {p["name"]: p for p in _creates(calls)}
    c = CLUSTER
    assert sorted(created) == sorted(f"{c}-{n}" for n in ("master", "hub", "worker-1", "worker-2", "gpu-worker-1"))
    roles = {"master": "master", "hub": "hub", "worker-1": "worker", "worker-2": "worker", "gpu-worker-1": "gpu_worker"}
    public_key = (pathlib.Path(world["env"]["HOME"]) / ".sparkfleet" / c / "ssh" / "id_ed25519.pub").read_text().split()[:2]
    for suffix, role in roles.items():
        p = created[f"{c}-{suffix}"]
        assert p["zone"] == ZONE
        assert p["labels"] == {"sparkfleet-cluster": c, "sparkfleet-role": role}
        assert p["tags"] == {"items": [c]}
        assert p["machine_type"] == DEFAULTS["provision_gcp_machine_types"][role]
        assert p["disks"][0]["boot"] and p["disks"][0]["auto_delete"]
        assert p["disks"][0]["initialize_params"]["disk_size_gb"] == DEFAULTS["provision_boot_disk_gb"][role]
        assert p["disks"][0]["initialize_params"]["source_image"] == DEFAULTS["provision_gcp_image"]
        assert p["network_interfaces"][0]["network"] == {"selfLink": f"projects/{PROJECT}/global/networks/default"}
        user, key = p["metadata"]["ssh-keys"].split(":", 1)
        assert user == "admin" and key.split()[:2] == public_key
        spot = role == "worker"
        assert p["scheduling"]["preemptible"] is spot and p["scheduling"]["automatic_restart"] is not spot
        gpu = role == "gpu_worker"
        assert p["scheduling"]["on_host_maintenance"] == ("TERMINATE" if gpu or spot else "MIGRATE")
        assert ("guest_accelerators" in p) is gpu
    assert created[f"{c}-gpu-worker-1"]["guest_accelerators"] == [
        {"accelerator_type": f"projects/{PROJECT}/zones/{ZONE}/acceleratorTypes/nvidia-tesla-t4", "accelerator_count": 1}]
    rules = {p["name"]: p for p in (c["params"] for c in calls if c["module"] == "gcp_compute_firewall")}
    cluster, admin = rules[f"{c}-cluster"], rules[f"{c}-admin"]
    assert cluster["allowed"] == _ports(DEFAULTS["provision_cluster_ports"])
    assert cluster["source_tags"] == cluster["target_tags"] == [c] and "source_ranges" not in cluster
    assert admin["allowed"] == _ports(DEFAULTS["provision_admin_ports"]) == [
        {"ip_protocol": "tcp", "ports": ["22"]}, {"ip_protocol": "tcp", "ports": ["443"]},
        {"ip_protocol": "tcp", "ports": ["8443"]}]
    assert admin["source_ranges"] == [ADMIN] and admin["target_tags"] == [c] and "source_tags" not in admin
    assert all(r["direction"] == "INGRESS" for r in rules.values())


def test_c_a_second_run_creates_nothing(world):
    before = _instances(world)
    result, calls = _run(world, "provision.yml")
    assert result.returncode == 0 and _changed(result.stdout) == 0
    assert _creates(calls) == []
    assert _instances(world) == before


def test_d_a_replacement_recreates_one_machine_with_the_same_identity(world):
    old = _instances(world)[f"{CLUSTER}-worker-1"]
    result, calls = _run(world, "provision.yml", "-e", f"provision_only={CLUSTER}-worker-1", "-e", "provision_recreate=true")
    assert result.returncode == 0
    touched = [(c["params"]["name"], c["params"]["state"]) for c in calls if c["module"] == "gcp_compute_instance"]
    assert touched == [(f"{CLUSTER}-worker-1", "absent"), (f"{CLUSTER}-worker-1", "present")]
    new = _instances(world)[f"{CLUSTER}-worker-1"]
    assert new["id"] != old["id"]
    assert (new["labels"], new["zone"], new["machineType"]) == (old["labels"], old["zone"], old["machineType"])


def test_d2_recreating_the_master_needs_its_name(world):
    """The master's disk holds the cluster's state: refused before any cloud call, then recreated
    once provision_recreate_confirm names it."""
    recreate = ("-e", f"provision_only={CLUSTER}-master", "-e", "provision_recreate=true")
    result, calls = _run(world, "provision.yml", *recreate)
    out = " ".join(result.stdout.split())
    assert result.returncode != 0 and calls == []
    assert f"deletes the disks of {CLUSTER}-master (" in out
    assert f"-e provision_recreate_confirm={CLUSTER}-master" in out
    old = _instances(world)[f"{CLUSTER}-master"]
    result, calls = _run(world, "provision.yml", *recreate, "-e", f"provision_recreate_confirm={CLUSTER}-master")
    assert result.returncode == 0
    touched = [(c["params"]["name"], c["params"]["state"]) for c in calls if c["module"] == "gcp_compute_instance"]
    assert touched == [(f"{CLUSTER}-master", "absent"), (f"{CLUSTER}-master", "present")]
    assert _instances(world)[f"{CLUSTER}-master"]["id"] != old["id"]


def test_e_scale_adds_gpu_workers_after_the_highest(world):
    result, calls = _run(world, "scale.yml", "-e", "add_gpu_workers=2")
    assert result.returncode == 0
    assert [p["name"] for p in _creates(calls)] == [f"{CLUSTER}-gpu-worker-2", f"{CLUSTER}-gpu-worker-3"]
    assert all(p["labels"]["sparkfleet-role"] == "gpu_worker" for p in _creates(calls))


def test_f_teardown_removes_the_cluster_and_nothing_else(world):
    result, calls = _run(world, "teardown.yml", "-e", f"teardown_confirm={CLUSTER}")
    assert result.returncode == 0
    assert list(_instances(world)) == ["other-worker-1"]
    deleted = sorted(c["params"]["name"] for c in calls if c["params"].get("state") == "absent")
    machines = ("master", "hub", "worker-1", "worker-2", "gpu-worker-1", "gpu-worker-2", "gpu-worker-3")
    assert deleted == sorted([f"{CLUSTER}-{n}" for n in machines] + [f"{CLUSTER}-cluster", f"{CLUSTER}-admin"])
    assert json.loads((world["state"] / "firewalls.json").read_text()) == {}
