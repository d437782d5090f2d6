"""The playbooks' structure: layers, preflight, component groups, FQCN roles."""

import pathlib
import re

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
PLAYBOOKS = ROOT / "playbooks"


def _yaml(path):
    return yaml.safe_load(path.read_text()) or []


def _imports(name):
    return [p["ansible.builtin.import_playbook"] for p in _yaml(PLAYBOOKS / name)]


def test_root_site_is_the_collection_playbook():
    assert _imports("../site.yml") == ["playbooks/site.yml"]


def test_preflight_runs_every_layer_of_site_in_order():
    site = _imports("site.yml")
    assert site[0] == "preflight.yml"
    layers = site[1:]
    preflight = _yaml(PLAYBOOKS / "preflight.yml")
    assert [p["ansible.builtin.import_playbook"] for p in preflight if "ansible.builtin.import_playbook" in p] == layers
    assert all(p.get("vars", {}).get("sparkfleet_preflight") is True for p in preflight if "ansible.builtin.import_playbook" in p)


def test_layer_plays_read_only_in_preflight_and_target_component_groups():
    known = set(yaml.safe_load((ROOT / "inventories" / "components.yml").read_text()))
    for layer in _imports("site.yml")[1:]:
        for play in _yaml(PLAYBOOKS / layer):
            if play["hosts"] == "localhost":
                # A layer may say something on the controller (why it does nothing); it changes nothing.
                assert "roles" not in play and play["become"] is False and play["connection"] == "local"
                assert all(set(t) & {"ansible.builtin.debug"} for t in play["tasks"]), f"{layer}: {play['name']}"
                continue
            assert "sparkfleet_preflight" in str(play["become"]), f"{layer}: become must be off in preflight"
            assert play["name"].endswith("{{ ' | preflight' if sparkfleet_preflight | default(false) else '' }}")
            # Every layer play can be narrowed to one group (replace_worker.yml converges only the
            # replacement and the hosts that keep membership); the default is every host.
            suffix = ":&{{ sparkfleet_run_group | default('all') }}"
            assert play["hosts"].endswith(suffix), f"{layer}: {play['hosts']} does not end with {suffix}"
            # A layer that belongs to one topology lists its groups only when the inventory has it.
            pattern = play["hosts"][: -len(suffix)]
            chosen = re.fullmatch(r"\{\{ '([a-z_:]+)' if groups\['([a-z_]+)'\] \| default\(\[\]\) \| length > 0 else 'localhost:!localhost' \}\}",
                                  pattern)
            if chosen:
                pattern = chosen.group(1)
                assert chosen.group(2) in known
            groups = {g for g in pattern.split(":") if g != "all"}
            assert groups <= known, f"{layer} targets {groups - known}, not component groups"
            for role in play.get("roles", []):
                assert role["role"].startswith("sparkfleet.cluster."), role
                assert role.get("tags"), f"{layer}: {role['role']} has no tag"


def test_no_playbook_uses_the_old_group_names():
    for path in list(PLAYBOOKS.glob("*.yml")) + list((ROOT / "roles").rglob("*.yml")) + list((ROOT / "molecule").rglob("*.yml")):
        text = path.read_text()
        for old in ("groups['masters']", "groups['workers']", "hosts: masters", "hosts: workers", "[masters]", "[workers]"):
            assert old not in text, f"{path.relative_to(ROOT)} still uses {old}"


def test_preflight_ends_by_stopping_the_run_on_any_failed_host():
    last = _yaml(PLAYBOOKS / "preflight.yml")[-1]
    assert last["any_errors_fatal"] is True and last["hosts"] == "all:&{{ sparkfleet_run_group | default('all') }}"
    stop, mark = last["tasks"]
    assert "ansible.builtin.fail" in stop and stop["run_once"] is True
    # The hosts Ansible dropped (failed or unreachable) are the ones not active any more.
    assert stop["vars"]["__preflight_failed"] == "{{ ansible_play_hosts_all | difference(ansible_play_hosts) }}"
    assert mark["ansible.builtin.set_fact"] == {"__sparkfleet_inputs_checked": True}
    assert all("always" in t["tags"] for t in last["tasks"])


def test_bake_hashes_every_role_it_applies_and_each_stops_before_settings():
    plays = _yaml(PLAYBOOKS / "bake.yml")
    bake = next(p for p in plays if p["hosts"] == "sparkfleet_bake")
    assert bake["vars"]["sparkfleet_bake"] is True
    baked = [r["role"].rsplit(".", 1)[1] for r in bake["roles"]]
    recipe = next(t for t in _yaml(ROOT / "roles" / "provision" / "tasks" / "lab_worker_image.yml")
                  if "ansible.builtin.set_fact" in t and "provision_lab_worker_image" in t["ansible.builtin.set_fact"])
    hashed = recipe["vars"]["__provision_baked_roles"]
    # The roles the baked ones include (apt index, downloads) are part of the recipe too.
    assert set(baked) | {"platform", "download"} <= set(hashed)
    for role in baked:
        tasks = _yaml(ROOT / "roles" / role / "tasks" / "main.yml")
        ends = [t for t in tasks if t.get("ansible.builtin.meta") == "end_role" and "sparkfleet_bake" in str(t.get("when"))]
        # java installs a JDK and records where: all of it belongs in the image.
        assert ends or role == "java", f"{role} has no end point for sparkfleet_bake"


def test_only_workers_and_gpu_workers_start_from_the_baked_image():
    lab = _yaml(PLAYBOOKS / "lab.yml")[0]
    run = next(t for t in lab["tasks"] if t["name"] == "Lab | Run one systemd container per host.")
    image = run["community.docker.docker_container"]["image"]
    assert "provision_lab_worker_image_present" in image
    assert "item in groups['role_worker'] + groups['role_gpu_worker'] | default([])" in image
    assert "else hostvars[item]['lab_image']" in image


def test_the_lab_runs_docker_in_docker():
    """The lab's Docker hosts get every capability but SYS_RESOURCE (which this kind of machine
    refuses), unconfined seccomp/AppArmor, rw cgroups and /var/lib/docker: what the lab test's hub +
    Swarm checks (tests/lab/swarm.yml) run on."""
    lab_vars = _yaml(ROOT / "inventories" / "lab" / "group_vars" / "all" / "lab.yml")
    caps = lab_vars["lab_docker_capabilities"]
    assert "SYS_RESOURCE" not in caps and "SYS_ADMIN" in caps and "NET_ADMIN" in caps
    assert {"SYS_PTRACE", "NET_RAW", "MKNOD", "SYS_MODULE"} <= set(caps) and len(caps) == len(set(caps)) >= 30
    lab = _yaml(PLAYBOOKS / "lab.yml")[0]
    run = next(t for t in lab["tasks"] if t["name"] == "Lab | Run one systemd container per host.")
    container = run["community.docker.docker_container"]
    assert "lab_docker_capabilities" in container["capabilities"] and "__docker" in container["capabilities"]
    assert "seccomp=unconfined" in container["security_opts"] and "apparmor=unconfined" in container["security_opts"]
    assert "'/var/lib/docker'" in container["volumes"] and container["keep_volumes"] is False
    # Docker hosts are the hub and the Swarm's nodes, and only when there is a Swarm manager.
    docker_hosts = lab["vars"]["__lab_docker_hosts"]
    assert "groups['swarm_managers']" in docker_hosts and "groups['swarm_workers']" in docker_hosts
    hosts = _yaml(ROOT / "inventories" / "lab" / "hosts.yml")["all"]["children"]
    assert list(hosts["role_hub"]["hosts"]) == ["sparkfleet-hub"]


def test_a_replacement_converges_the_replaced_workers_only():
    plays = _yaml(PLAYBOOKS / "replace_worker.yml")
    check = next(p for p in plays if p.get("name") == "Replace worker | Check the request")
    group = next(t for t in check["tasks"] if t["name"] == "Replace worker | Group the hosts to converge.")
    assert group["loop"] == "{{ __replace_workers }}"
    assert group["ansible.builtin.add_host"]["groups"] == ["sparkfleet_replace_converge", "sparkfleet_replaced"]


def _lab_host_ports():
    """The controller ports the lab publishes: each host's SSH port (the lab test's GPU worker's too)
    and the UI gateway's and hub's."""

    def walk(group):
        for name, hostvars in (group.get("hosts") or {}).items():
            yield name, (hostvars or {}).get("ansible_port")
        for child in (group.get("children") or {}).values():
            yield from walk(child or {})

    inventories = (ROOT / "inventories" / "lab" / "hosts.yml", ROOT / "tests" / "lab" / "inventory" / "hosts.yml")
    ports = {port for hosts in map(_yaml, inventories) for host, port in walk(hosts["all"]) if host and port}
    published = _yaml(ROOT / "inventories" / "lab" / "group_vars" / "all" / "lab.yml")["lab_published_ports"]
    return ports | {int(p) for p in published.values() if int(p)}


def test_scenarios_and_the_lab_publish_distinct_controller_ports():
    """Each scenario publishes controller ports of its own, none of them the lab's: the lanes run two
    scenarios at a time, and the suite runs beside a lab a user (or an earlier run: its containers
    restart with the engine) left up. CI once failed on a scenario publishing the lab's 8443."""
    lab = _lab_host_ports()
    assert {2220, 2221, 2222, 2223, 8443, 8444} <= lab
    owners = {}
    for scenario in sorted((ROOT / "molecule").glob("*/molecule.yml")):
        for platform in _yaml(scenario).get("platforms") or []:
            for spec in platform.get("published_ports") or []:
                parts = str(spec).split(":")
                assert len(parts) == 3 and parts[0] == "127.0.0.1", f"{scenario.parent.name}: {spec} (loopback only)"
                port = int(parts[1])
                assert port not in lab, f"{scenario.parent.name} publishes the lab's port {port}"
                assert port not in owners, f"{scenario.parent.name} and {owners.get(port)} both publish {port}"
                owners[port] = scenario.parent.name
    assert len(owners) >= 13
