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
