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
MODULES = ("gcp_compute_instance", "gcp_compute_instance_info", "gcp_compute_firewall", "gcp_compute_network",
           "gcp_compute_subnetwork", "gcp_iam_service_account")
ACCOUNT = f"sparkfleet-{CLUSTER}@{PROJECT}.iam.gserviceaccount.com"
NETWORK = f"projects/{PROJECT}/global/networks/{CLUSTER}"


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
    path = playbook if os.path.isabs(playbook) else f"playbooks/{playbook}"
    cmd = [str(BIN / "ansible-playbook"), path, "-i", "inventories/gcp", "-e", f"@{world['extra']}", *args]
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
    return [{"ip_protocol": p["protocol"], **({"ports": p["ports"]} if "ports" in p else {})} for p in spec]


def _params(calls, module):
    return {c["params"]["name"]: c["params"] for c in calls if c["module"] == module}


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
        # The cluster's own network and subnetwork, its own service account with two write-only scopes.
        assert p["network_interfaces"][0]["network"] == {"selfLink": NETWORK}
        assert p["network_interfaces"][0]["subnetwork"] == {"selfLink": f"projects/{PROJECT}/regions/us-central1/subnetworks/{c}"}
        assert p["service_accounts"] == [{"email": ACCOUNT, "scopes": [
            "https://www.googleapis.com/auth/logging.write", "https://www.googleapis.com/auth/monitoring.write"]}]
        user, key = p["metadata"]["ssh-keys"].split(":", 1)
        assert user == "admin" and key.split()[:2] == public_key
        spot = role == "worker"
        assert p["scheduling"]["preemptible"] is spot and p["scheduling"]["automatic_restart"] is not spot
        gpu = role == "gpu_worker"
        assert p["scheduling"]["on_host_maintenance"] == ("TERMINATE" if gpu or spot else "MIGRATE")
        assert ("guest_accelerators" in p) is gpu
    assert created[f"{c}-gpu-worker-1"]["guest_accelerators"] == [
        {"accelerator_type": f"projects/{PROJECT}/zones/{ZONE}/acceleratorTypes/nvidia-tesla-t4", "accelerator_count": 1}]
    assert _params(calls, "gcp_iam_service_account") == {ACCOUNT: {
        "name": ACCOUNT, "display_name": f"sparkfleet-cluster={c}: the machines' identity, no roles", "state": "present",
        "project": PROJECT}}
    assert _params(calls, "gcp_compute_network") == {c: {
        "name": c, "auto_create_subnetworks": False, "description": f"sparkfleet-cluster={c}: the cluster's network",
        "state": "present", "project": PROJECT}}
    subnet = _params(calls, "gcp_compute_subnetwork")[c]
    assert (subnet["network"], subnet["region"], subnet["ip_cidr_range"]) == ({"selfLink": NETWORK}, "us-central1", "10.100.0.0/20")
    rules = _params(calls, "gcp_compute_firewall")
    assert sorted(rules) == [f"{c}-admin", f"{c}-cluster", f"{c}-deny"]
    assert all(r["network"] == {"selfLink": NETWORK} for r in rules.values())
    cluster, admin, deny = rules[f"{c}-cluster"], rules[f"{c}-admin"], rules[f"{c}-deny"]
    assert cluster["allowed"] == _ports(DEFAULTS["provision_cluster_ports"])
    # Swarm's ports and ESP (encrypted overlay networks), between the cluster's machines only.
    assert {"ip_protocol": "udp", "ports": ["4789", "7946"]} in cluster["allowed"]
    assert {"ip_protocol": "50"} in cluster["allowed"]
    # Everything else denied, after the allow rules (1000) and before a default network's (65534).
    assert deny["denied"] == [{"ip_protocol": "all"}] and deny["priority"] == 65000 and "allowed" not in deny
    assert deny["source_ranges"] == ["0.0.0.0/0"] and deny["target_tags"] == [c]
    assert cluster["source_tags"] == cluster["target_tags"] == [c] and "source_ranges" not in cluster
    assert admin["allowed"] == _ports(DEFAULTS["provision_admin_ports"]) == [
        {"ip_protocol": "tcp", "ports": ["22"]}, {"ip_protocol": "tcp", "ports": ["443"]},
        {"ip_protocol": "tcp", "ports": ["8443"]}]
    assert admin["source_ranges"] == [ADMIN] and admin["target_tags"] == [c] and "source_tags" not in admin
    assert all(r["direction"] == "INGRESS" for r in rules.values())


def test_b2_an_existing_cluster_on_another_network_is_refused(world):
    """A cluster on the default network (as before there was a network of its own) keeps it:
    new machines would not reach the old ones across two networks."""
    result, calls = _run(world, "provision.yml", "-e", "provision_gcp_network=default")
    assert result.returncode != 0 and "provision_gcp_network" in result.stdout
    assert [c["module"] for c in calls] == ["gcp_compute_instance_info"]


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


def test_e2_removing_workers_deletes_exactly_those(world, tmp_path):
    """The provision role's remove entry point (remove_worker.yml's last step, the autoscaler's way
    down): the named workers of this cluster, nothing else; any other name refused before a call."""
    play = tmp_path / "remove.yml"
    # The playbooks' own group_vars (the cluster's SSH key...), as for a playbook in playbooks/.
    (tmp_path / "group_vars").symlink_to(ROOT / "playbooks" / "group_vars")
    play.write_text(yaml.safe_dump([{"hosts": "localhost", "connection": "local", "gather_facts": False, "tasks": [
        {"ansible.builtin.include_role": {"name": "sparkfleet.cluster.provision", "tasks_from": "remove"}}]}]))
    before = set(_instances(world))
    for refused in (f"{CLUSTER}-master", "other-worker-1"):
        result, calls = _run(world, str(play), "-e", json.dumps({"provision_remove": [f"{CLUSTER}-worker-2", refused]}))
        assert result.returncode != 0 and f"provision_remove names {refused}" in " ".join(result.stdout.split())
        assert [c for c in calls if c["module"] == "gcp_compute_instance"] == []
    result, calls = _run(world, str(play), "-e", json.dumps({"provision_remove": [f"{CLUSTER}-gpu-worker-3", f"{CLUSTER}-worker-2"]}))
    assert result.returncode == 0
    deleted = sorted(c["params"]["name"] for c in calls if c["module"] == "gcp_compute_instance")
    assert deleted == [f"{CLUSTER}-gpu-worker-3", f"{CLUSTER}-worker-2"]
    assert set(_instances(world)) == before - set(deleted)
    # Again: nothing left to delete, nothing else touched.
    result, calls = _run(world, str(play), "-e", json.dumps({"provision_remove": [f"{CLUSTER}-worker-2"]}))
    assert result.returncode == 0 and [c for c in calls if c["module"] == "gcp_compute_instance"] == []


def test_f_teardown_removes_the_cluster_and_nothing_else(world):
    result, calls = _run(world, "teardown.yml", "-e", f"teardown_confirm={CLUSTER}")
    assert result.returncode == 0
    assert list(_instances(world)) == ["other-worker-1"]
    deleted = sorted(c["params"]["name"] for c in calls if c["params"].get("state") == "absent")
    machines = ("master", "hub", "worker-1", "gpu-worker-1", "gpu-worker-2")
    rules = [f"{CLUSTER}-cluster", f"{CLUSTER}-admin", f"{CLUSTER}-deny"]
    assert deleted == sorted([f"{CLUSTER}-{n}" for n in machines] + rules + [CLUSTER, CLUSTER, ACCOUNT])
    # The network goes after its firewall rules and subnetwork, which would keep it.
    order = [(c["module"], c["params"]["name"]) for c in calls if c["params"].get("state") == "absent"][-3:]
    assert order == [("gcp_compute_subnetwork", CLUSTER), ("gcp_compute_network", CLUSTER), ("gcp_iam_service_account", ACCOUNT)]
    for store in ("firewalls", "networks", "subnetworks", "service_accounts"):
        assert json.loads((world["state"] / f"{store}.json").read_text()) == {}


def test_g_an_existing_network_and_account_are_used_and_kept(world):
    """provision_gcp_network: default and a named account: nothing of either is created or
    deleted; the deny rule closes the default network's broad rules to the cluster's machines."""
    account = f"ops@{PROJECT}.iam.gserviceaccount.com"
    keep = ["-e", json.dumps({"provision_gcp_network": "default", "provision_gcp_service_account": account,
                              "provision_workers": 1, "provision_gpu_workers": 0})]
    result, calls = _run(world, "provision.yml", *keep)
    assert result.returncode == 0
    assert {c["module"] for c in calls} == {"gcp_compute_instance_info", "gcp_compute_firewall", "gcp_compute_instance"}
    default = {"selfLink": f"projects/{PROJECT}/global/networks/default"}
    rules = _params(calls, "gcp_compute_firewall")
    assert sorted(rules) == [f"{CLUSTER}-admin", f"{CLUSTER}-cluster", f"{CLUSTER}-deny"]
    assert all(r["network"] == default for r in rules.values())
    assert rules[f"{CLUSTER}-deny"]["priority"] == 65000
    for p in _creates(calls):
        assert p["network_interfaces"][0]["network"] == default and "subnetwork" not in p["network_interfaces"][0]
        assert p["service_accounts"][0]["email"] == account

    result, calls = _run(world, "teardown.yml", "-e", f"teardown_confirm={CLUSTER}", *keep)
    assert result.returncode == 0
    assert {c["module"] for c in calls} == {"gcp_compute_instance_info", "gcp_compute_firewall", "gcp_compute_instance"}
    assert list(_instances(world)) == ["other-worker-1"]
