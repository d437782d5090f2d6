"""The example cloud inventories and the provision role agree: the same label names, the
same group prefix as the lab, the cluster filter equal to sparkfleet_cluster_name, and the
component groups linked in."""

import pytest
import yaml

from conftest import ROOT, RoleRenderer

CLOUDS = {"gcp": "gcp.yml", "aws": "aws_ec2.yml"}
# The machines' labels (GCP) or tags (AWS), as the inventory plugin shows them to compose and keyed_groups.
ATTRIBUTES = {"gcp": "labels", "aws": "aws_tags"}


def _yaml(path):
    return yaml.safe_load(path.read_text())


@pytest.mark.parametrize("cloud", sorted(CLOUDS))
def test_the_inventory_directory_links_the_component_groups(cloud):
    link = ROOT / "inventories" / cloud / "components.yml"
    assert link.is_symlink() and str(link.readlink()) == "../components.yml"
    assert link.resolve() == (ROOT / "inventories" / "components.yml").resolve()


@pytest.mark.parametrize("cloud", sorted(CLOUDS))
def test_machine_roles_become_role_groups_from_the_label(cloud):
    config = _yaml(ROOT / "inventories" / cloud / CLOUDS[cloud])
    assert config["plugin"] == {"gcp": "google.cloud.gcp_compute", "aws": "amazon.aws.aws_ec2"}[cloud]
    (group,) = config["keyed_groups"]
    assert group["prefix"] == "role" and group["separator"] == "_"
    # gcp_compute's compose and keyed_groups read the API's names; aws_ec2's its prefixed host variables.
    assert group["key"] == {"gcp": "labels['sparkfleet-role']", "aws": "aws_tags['sparkfleet-role']"}[cloud]
    assert config["compose"]["ansible_host"] == {"gcp": "networkInterfaces[0].networkIP", "aws": "aws_private_ip_address"}[cloud]
    # Every machine-role group the plugin can make is one components.yml derives component groups from.
    components = _yaml(ROOT / "inventories" / "components.yml")
    children = {child for group in components.values() for child in (group or {}).get("children") or {}}
    assert {f"role_{role}" for role in ("master", "worker", "gpu_worker", "hub", "notebook")} <= children


@pytest.mark.parametrize("cloud", sorted(CLOUDS))
def test_the_cluster_filter_is_sparkfleet_cluster_name(cloud):
    config = _yaml(ROOT / "inventories" / cloud / CLOUDS[cloud])
    group_vars = _yaml(ROOT / "inventories" / cloud / "group_vars" / "all" / "main.yml")
    name = group_vars["sparkfleet_cluster_name"]
    assert group_vars["sparkfleet_provider"] == cloud
    if cloud == "gcp":
        assert f"labels.sparkfleet-cluster = {name}" in config["filters"]
    else:
        assert config["filters"]["tag:sparkfleet-cluster"] == name
    # Not the lab's host names: the fact cache is keyed by host name on the controller.
    assert name != "sparkfleet"
    # No world-open default for the admin ports.
    assert group_vars["provision_admin_cidrs"] == []


def _tasks(tasks):
    for task in tasks:
        yield task
        yield from _tasks(task.get("block", []))


@pytest.mark.parametrize("cloud", sorted(CLOUDS))
@pytest.mark.parametrize("role", ["master", "worker", "gpu_worker", "hub", "notebook"])
def test_the_role_labels_what_the_inventories_read(cloud, role):
    """A machine the provision role creates, as the cloud inventory reads it back: in this cluster (the
    inventory's filter, sparkfleet_cluster_name) and in the machine-role group of its role."""
    (create,) = [t for t in _tasks(_yaml(ROOT / "roles" / "provision" / "tasks" / f"{cloud}_present.yml"))
                 if t.get("name") == "Provision | Create the missing machines."]
    module = next(key for key in create if key.endswith(("gcp_compute_instance", "ec2_instance")))
    name = _yaml(ROOT / "inventories" / cloud / "group_vars" / "all" / "main.yml")["sparkfleet_cluster_name"]
    machine = f"{name}-{role}-1"
    provision = RoleRenderer("provision", extra={"provision_cluster_name": name, "__provision_plan": {machine: role},
                                                 "item": machine, **create["vars"]})
    marks = provision.string(create[module]["labels" if cloud == "gcp" else "tags"], "localhost")
    # The inventory's filter selects the machine: `labels.KEY = VALUE` (GCP), {tag:KEY: VALUE} (AWS).
    config = _yaml(ROOT / "inventories" / cloud / CLOUDS[cloud])
    if cloud == "gcp":
        wanted = dict(f.removeprefix("labels.").split(" = ", 1) for f in config["filters"] if f.startswith("labels."))
    else:
        wanted = {k.removeprefix("tag:"): v for k, v in config["filters"].items() if k.startswith("tag:")}
    assert wanted and all(marks.get(key) == value for key, value in wanted.items()), (wanted, marks)
    # Its compose and keyed_groups read the cluster's name and the machine-role group from them.
    seen = RoleRenderer(extra={ATTRIBUTES[cloud]: marks})
    assert seen.value(config["compose"]["sparkfleet_cluster_name"]) == name
    (group,) = config["keyed_groups"]
    assert f"{group['prefix']}{group['separator']}{seen.value(group['key'])}" == f"role_{role}"


def test_the_roles_defaults_open_nothing_to_the_world():
    defaults = _yaml(ROOT / "roles/provision/defaults/main.yml")
    assert defaults["provision_admin_cidrs"] == [] and defaults["provision_allow_world"] is False
