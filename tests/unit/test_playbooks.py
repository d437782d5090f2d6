"""The playbooks' structure: layers, preflight, component groups, FQCN roles; their expressions
rendered (and their host patterns resolved) with the shared RoleRenderer."""

import warnings

import yaml
from jinja2 import nodes

from conftest import OMITTED, ROOT, RoleRenderer

PLAYBOOKS = ROOT / "playbooks"


def _yaml(path):
    return yaml.safe_load(path.read_text()) or []


def _imports(name):
    return [p["ansible.builtin.import_playbook"] for p in _yaml(PLAYBOOKS / name) if "ansible.builtin.import_playbook" in p]


def test_root_site_is_the_collection_playbook():
    assert _imports("../site.yml") == ["playbooks/site.yml"]


def test_preflight_runs_every_layer_of_site_in_order():
    site = _imports("site.yml")
    assert site[0] == "preflight.yml"
    layers = site[1:]
    preflight = _yaml(PLAYBOOKS / "preflight.yml")
    assert [p["ansible.builtin.import_playbook"] for p in preflight if "ansible.builtin.import_playbook" in p] == layers
    assert all(p.get("vars", {}).get("sparkfleet_preflight") is True for p in preflight if "ansible.builtin.import_playbook" in p)


def test_site_leaves_out_the_hosts_the_last_whole_run_left_as_they_are():
    """site.yml fingerprints the inputs' sources once, asks each host whether it is as the last whole
    run left it (always, whatever the tags), gives every import the pattern that leaves those hosts
    out, and records the run last, on the hosts it went through."""
    plays = _yaml(PLAYBOOKS / "site.yml")
    scan, *imports, mark = plays
    sources, check = scan["tasks"]
    assert sources["sparkfleet.cluster.applied_state"] == {"sources": True} and sources["run_once"] is True
    assert sources["register"] == "__sparkfleet_sources"
    assert check["sparkfleet.cluster.applied_state"] == {"scan": "{{ __sparkfleet_sources.sources }}"}
    assert check["changed_when"] is False and check["become"] is True
    assert all(t["tags"] == ["always"] for t in scan["tasks"] + mark["tasks"])
    leave_out = [p["vars"]["sparkfleet_leave_out"] for p in imports]
    assert len(set(leave_out)) == 1 and mark["vars"]["sparkfleet_leave_out"] == leave_out[0]
    (record,) = mark["tasks"]
    assert record["sparkfleet.cluster.applied_state"] == {"mark": "{{ __sparkfleet_sources.sources }}"}
    # With nothing unchanged the pattern adds nothing (no warning about a group that does not exist);
    # with a host unchanged, it is left out.
    every = _inventory(sparkfleet_leave_out=leave_out[0])
    assert every.play_hosts(mark["hosts"]) == every.play_hosts("all")
    unchanged = _inventory(sparkfleet_leave_out=leave_out[0], unchanged=["spark_workers-1"])
    assert "spark_workers-1" not in unchanged.play_hosts(mark["hosts"])
    for layer in ["preflight.yml"] + _imports("site.yml")[1:]:
        for play in _yaml(PLAYBOOKS / layer):
            if "hosts" in play and play["hosts"] != "localhost":
                assert "spark_workers-1" not in unchanged.play_hosts(play["hosts"]), f"{layer}: {play['name']}"


COMPONENT_GROUPS = set(yaml.safe_load((ROOT / "inventories" / "components.yml").read_text()))
# One host in each component group (and one in none), and the group a run is narrowed to
# (replace_worker.yml's): a replaced worker and a master that keeps its membership.
INVENTORY = {group: [f"{group}-1"] for group in sorted(COMPONENT_GROUPS)}
NARROWED = ["spark_workers-1", "spark_masters-1"]


def _inventory(swarm=True, unchanged=None, **extra):
    groups = {g: hosts for g, hosts in INVENTORY.items() if swarm or g != "swarm_managers"}
    groups["sparkfleet_replace_converge"] = NARROWED
    if unchanged:
        groups["sparkfleet_unchanged"] = unchanged
    return RoleRenderer(groups=groups, hostvars={"stranger": {}}, extra=extra)


def test_layer_plays_read_only_in_preflight_and_target_component_groups():
    for layer in _imports("site.yml")[1:]:
        for play in _yaml(PLAYBOOKS / layer):
            where = f"{layer}: {play['name']}"
            if play["hosts"] == "localhost":
                # A layer may say something on the controller (why it does nothing); it changes nothing.
                assert "roles" not in play and play["become"] is False and play["connection"] == "local"
                assert all(set(t) & {"ansible.builtin.debug"} for t in play["tasks"]), where
                continue
            # The preflight pass reads only: no privilege, and the play says it is the preflight.
            run, preflight = _inventory(), _inventory(sparkfleet_preflight=True)
            assert run.string(play["become"], "localhost") is True, where
            assert preflight.string(play["become"], "localhost") is False, where
            assert preflight.string(play["name"], "localhost") == run.string(play["name"], "localhost") + " | preflight"
            # The play's hosts are component groups (or all of them).
            pattern = run.string(play["hosts"], "localhost")
            named = {g.lstrip("&!") for g in pattern.split(":")} - {"all"}
            assert named <= COMPONENT_GROUPS, f"{where} targets {named - COMPONENT_GROUPS}, not component groups"
            selected = set(run.play_hosts(play["hosts"]))
            assert selected, f"{where} selects no host of a full inventory"
            # Every layer play can be narrowed to one group (replace_worker.yml converges only the
            # replacement and the hosts that keep membership); the default is every host.
            narrowed = _inventory(sparkfleet_run_group="sparkfleet_replace_converge").play_hosts(play["hosts"])
            assert set(narrowed) == selected & set(NARROWED), where
            # A layer that belongs to one topology (the Swarm's) targets no host when the inventory has
            # none of it; the other plays stay as they are.
            without = _inventory(swarm=False)
            if without.string(play["hosts"], "localhost") != pattern:
                assert without.play_hosts(play["hosts"]) == [], where
            assert "roles" not in play, f"{where}: roles run through the applied-state gate"
            _check_gate(play, where)


def _check_gate(play, where):
    """A layer play asks the applied-state gate which roles are due (always, whatever the tags),
    ends the play on the hosts with no role due and none to check, runs the checks (validate entry
    point) of those it says to check, includes each listed role when due, its tasks tagged with its
    name, and records after the handlers."""
    gate, end, checks, *includes = play["tasks"]
    assert gate["register"] == "__sparkfleet_applied" and gate["tags"] == ["always"], where
    check = checks["ansible.builtin.include_role"]
    assert check["tasks_from"] == "validate" and check["name"] == "sparkfleet.cluster.{{ __sparkfleet_role }}", where
    assert check["public"] is True, where
    assert checks["loop"] == "{{ __sparkfleet_applied.check }}", where
    assert checks["loop_control"]["loop_var"] == "__sparkfleet_role", where
    assert checks["tags"] == ["always"] and check["apply"]["tags"] == ["always"], where
    assert end["ansible.builtin.meta"] == "end_host" and end["tags"] == ["always"], where
    assert end["when"] == "(__sparkfleet_applied.due + __sparkfleet_applied.check) | length == 0", where
    listed = gate["sparkfleet.cluster.applied_state"]["roles"]
    # A list, or an expression naming them: in the order it names them.
    listed = listed if isinstance(listed, list) else sorted((n for n in ROLE_NAMES if f"'{n}'" in listed),
                                                            key=lambda n: listed.index(f"'{n}'"))
    included = []
    for task in includes:
        role = task["ansible.builtin.include_role"]["name"].removeprefix("sparkfleet.cluster.")
        when = task["when"] if isinstance(task["when"], list) else [task["when"]]
        assert f"'{role}' in __sparkfleet_applied.due" in when, f"{where}: {role} runs whether due or not"
        # Included under any --tags, as a play's roles: are (their checks are tagged always); the
        # role's own tasks carry its tags.
        assert task["tags"] == ["always"] and role in task["ansible.builtin.include_role"]["apply"]["tags"], where
        included.append(role)
    assert included == listed, f"{where}: includes {included}, the gate lists {listed}"
    (record,) = play["post_tasks"]
    assert record["sparkfleet.cluster.applied_state"] == {"record": "{{ __sparkfleet_applied }}"}, where
    assert record["tags"] == ["always"], where


ROLE_NAMES = sorted(p.name for p in (ROOT / "roles").iterdir() if p.is_dir())


CONDITIONS = ("when", "that", "failed_when", "changed_when", "until")
JINJA = RoleRenderer().environment()


def _parse(template):
    """The template as Ansible's Jinja parses it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # a regex argument's backslashes
        return JINJA.parse(template)


def _expressions(node, key=None):
    """Every Jinja expression of a loaded playbook, tasks or vars file, parsed: templated strings,
    and the bare expressions of conditions (when, that, ...)."""
    if isinstance(node, dict):
        for k, value in node.items():
            yield from _expressions(value, k)
    elif isinstance(node, list):
        for value in node:
            yield from _expressions(value, key)
    elif isinstance(node, str):
        if "{{" in node or "{%" in node:
            yield _parse(node)
        elif key in CONDITIONS:
            yield _parse("{{ " + node + " }}")


def _tasks(node):
    if isinstance(node, list):
        for item in node:
            yield from _tasks(item)
    elif isinstance(node, dict):
        yield node
        for key in ("tasks", "pre_tasks", "post_tasks", "handlers", "block", "rescue", "always"):
            yield from _tasks(node.get(key) or [])


def test_every_group_an_expression_names_exists():
    """groups['x'] in any expression of the playbooks, roles and scenarios names a group the inventories
    define (components.yml, its machine-role groups) or a play creates (add_host): not an old or
    mistyped name, which Ansible reports only when the expression runs."""
    files = [*PLAYBOOKS.glob("*.yml"), *(ROOT / "roles").rglob("*.yml"), *(ROOT / "molecule").rglob("*.yml")]
    loaded = {path: yaml.safe_load(path.read_text()) for path in files}
    components = yaml.safe_load((ROOT / "inventories" / "components.yml").read_text())
    known = {"all", "ungrouped"} | set(components) | {c for g in components.values() for c in (g or {}).get("children", {})}
    for data in loaded.values():
        for task in _tasks(data):
            created = (task.get("ansible.builtin.add_host") or {}).get("groups", [])
            known |= {g for g in ([created] if isinstance(created, str) else created) if "{" not in g}
    named = {}
    for path, data in loaded.items():
        for template in _expressions(data):
            for item in template.find_all(nodes.Getitem):
                if isinstance(item.node, nodes.Name) and item.node.name == "groups" and isinstance(item.arg, nodes.Const):
                    named.setdefault(item.arg.value, set()).add(str(path.relative_to(ROOT)))
    assert {"spark_masters", "spark_workers", "hub", "swarm_managers"} <= set(named)
    unknown = {group: sorted(paths) for group, paths in named.items() if group not in known}
    assert not unknown, f"groups no inventory defines: {unknown}"


def test_preflight_ends_by_stopping_the_run_on_any_failed_host():
    last = _yaml(PLAYBOOKS / "preflight.yml")[-1]
    assert last["any_errors_fatal"] is True
    # Every host of the run, narrowed like the layers.
    assert _inventory().play_hosts(last["hosts"]) == sorted([h for hosts in INVENTORY.values() for h in hosts] + ["stranger"])
    assert _inventory(sparkfleet_run_group="sparkfleet_replace_converge").play_hosts(last["hosts"]) == sorted(NARROWED)
    (stop,) = last["tasks"]
    assert "ansible.builtin.fail" in stop and stop["run_once"] is True
    # The hosts Ansible dropped (failed or unreachable) are the ones not active any more: the run stops
    # naming them; with none dropped it goes on.
    play = {"ansible_play_hosts_all": ["m1", "w1", "w2"]}
    dropped = RoleRenderer(extra={**play, "ansible_play_hosts": ["m1"], **stop["vars"]})
    assert dropped.value(stop["when"]) is True
    assert sorted(dropped.value("__preflight_failed")) == ["w1", "w2"]
    named = dropped.string(stop["ansible.builtin.fail"]["msg"]).removeprefix("The preflight did not pass on ")
    assert sorted(named.split(" (its error", 1)[0].split(", ")) == ["w1", "w2"]
    assert RoleRenderer(extra={**play, "ansible_play_hosts": ["m1", "w1", "w2"], **stop["vars"]}).value(stop["when"]) is False
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


LAB_HOSTS = {"role_master": ["sparkfleet-master"], "role_worker": ["sparkfleet-worker-1", "sparkfleet-worker-2"],
             "role_gpu_worker": ["sparkfleet-gpu-worker"], "role_hub": ["sparkfleet-hub"]}


def _lab_container(item, swarm=True, **extra):
    """The arguments of lab.yml's docker_container task for one host, as the play renders them for a
    lab inventory (the machine-role groups, components.yml's groups, the lab's group_vars)."""
    lab = _yaml(PLAYBOOKS / "lab.yml")[0]
    run = next(t for t in lab["tasks"] if t["name"] == "Lab | Run one systemd container per host.")
    lab_vars = _yaml(ROOT / "inventories" / "lab" / "group_vars" / "all" / "lab.yml")
    groups = dict(LAB_HOSTS, spark_masters=LAB_HOSTS["role_master"], hub=LAB_HOSTS["role_hub"],
                  swarm_managers=LAB_HOSTS["role_hub"] if swarm else [],
                  swarm_workers=LAB_HOSTS["role_worker"] + LAB_HOSTS["role_gpu_worker"])
    hosts = sorted({h for members in LAB_HOSTS.values() for h in members})
    hostvars = {h: {**lab_vars, "ansible_port": 2220 + i, "lab_ssh_key_file": "/creds/lab_ed25519",
                    "sparkfleet_credentials_dir": "/creds", "sparkfleet_cluster_name": "sparkfleet",
                    "group_names": [g for g, members in LAB_HOSTS.items() if h in members]}
                for i, h in enumerate(hosts)}
    renderer = RoleRenderer(groups=groups, hostvars=hostvars,
                            extra={**lab["vars"], **run["vars"], "item": item, **extra})
    return {key: renderer.string(value, "localhost") for key, value in run["community.docker.docker_container"].items()
            if key in ("image", "capabilities", "security_opts", "volumes", "keep_volumes")}


def test_only_workers_and_gpu_workers_start_from_the_baked_image():
    baked = {"provision_lab_worker_image": "sparkfleet/lab-worker:0123abcd", "provision_lab_worker_image_present": True}
    for host in ("sparkfleet-worker-1", "sparkfleet-gpu-worker"):
        assert _lab_container(host, **baked)["image"] == "sparkfleet/lab-worker:0123abcd"
    for host in ("sparkfleet-master", "sparkfleet-hub"):
        assert _lab_container(host, **baked)["image"] == "sparkfleet/debian12-systemd:latest"
    # No baked image (yet): every host starts from the lab's image.
    not_baked = {**baked, "provision_lab_worker_image_present": False}
    assert _lab_container("sparkfleet-worker-1", **not_baked)["image"] == "sparkfleet/debian12-systemd:latest"


def test_the_lab_runs_docker_in_docker():
    """The lab's Docker hosts get every capability but SYS_RESOURCE (which this kind of machine
    refuses), unconfined seccomp/AppArmor, rw cgroups and /var/lib/docker: what the lab test's hub +
    Swarm checks (tests/lab/swarm.yml) run on."""
    lab_vars = _yaml(ROOT / "inventories" / "lab" / "group_vars" / "all" / "lab.yml")
    caps = lab_vars["lab_docker_capabilities"]
    assert "SYS_RESOURCE" not in caps and "SYS_ADMIN" in caps and "NET_ADMIN" in caps
    assert {"SYS_PTRACE", "NET_RAW", "MKNOD", "SYS_MODULE"} <= set(caps) and len(caps) == len(set(caps)) >= 30
    # Docker hosts are the hub and the Swarm's nodes, and only when there is a Swarm manager.
    for host in ("sparkfleet-hub", "sparkfleet-worker-1", "sparkfleet-gpu-worker"):
        container = _lab_container(host)
        assert container["capabilities"] == caps, host
        assert container["security_opts"] == ["seccomp=unconfined", "apparmor=unconfined"], host
        assert "/var/lib/docker" in container["volumes"] and "/sys/fs/cgroup:/sys/fs/cgroup:rw" in container["volumes"]
        # The anonymous /var/lib/docker goes with its container.
        assert container["keep_volumes"] is False
    for container in (_lab_container("sparkfleet-master"), _lab_container("sparkfleet-hub", swarm=False)):
        assert container["capabilities"] == ["SYS_ADMIN", "NET_ADMIN"]
        assert container["security_opts"] is OMITTED
        assert "/var/lib/docker" not in container["volumes"] and "/sys/fs/cgroup:/sys/fs/cgroup:ro" in container["volumes"]
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
    restart with the engine) left up: a scenario publishing one of the lab's ports (8443, say)
    fails to start beside it."""
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
