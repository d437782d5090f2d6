"""The example cloud inventories and the provision role agree: the same label names, the
same group prefix as the lab, the cluster filter equal to sparkfleet_cluster_name, and the
component groups linked in."""

import pathlib

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLOUDS = {"gcp": "gcp.yml", "aws": "aws_ec2.yml"}


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
    # Every machine-role group the plugin can make is one components.yml knows.
    components = (ROOT / "inventories" / "components.yml").read_text()
    for role in ("master", "worker", "gpu_worker", "hub", "notebook"):
        assert f"role_{role}:" in components


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


def test_the_role_labels_what_the_inventories_read():
    gcp = (ROOT / "roles/provision/tasks/gcp_present.yml").read_text()
    aws = (ROOT / "roles/provision/tasks/aws_present.yml").read_text()
    for text in (gcp, aws):
        assert 'sparkfleet-cluster: "{{ provision_cluster_name }}"' in text
        assert 'sparkfleet-role: "{{ __provision_role }}"' in text
    defaults = _yaml(ROOT / "roles/provision/defaults/main.yml")
    assert defaults["provision_admin_cidrs"] == [] and defaults["provision_allow_world"] is False
