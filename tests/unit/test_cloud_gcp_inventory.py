"""inventories/gcp through the real google.cloud.gcp_compute plugin, offline.

The plugin hard-codes Google's URLs, so its session (GcpSession) is replaced by one that
checks the request (project, zone list, the cluster filter, paging) and answers with the
Compute API aggregatedList pages in tests/fixtures/gcp/. The plugin itself (paging,
zones, hostnames, compose, keyed_groups) and the inventory directory (components.yml,
group_vars) are the real ones."""

import importlib
import json
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "gcp"
PROJECT = "my-project"
CLUSTER = "sparkfleet-gcp"
pytestmark = pytest.mark.filterwarnings("ignore:AnsibleCollectionFinder has already been configured")
pytest.importorskip("google.auth", reason="google-auth is not installed (the gcp_compute plugin needs it)")


class _Response:
    def __init__(self, data, status=200):
        self._data = data
        self.status_code = status

    def json(self):
        return self._data

    def raise_for_status(self):
        return None


class _RecordedSession:
    """GcpSession's place: the recorded aggregatedList pages, in order, by pageToken."""

    requests = []

    def __init__(self, module, product):
        assert product == "compute"
        self.params = module.params

    def get(self, url, params=None, **kwargs):
        self.requests.append({"url": url, "params": dict(params or {})})
        assert url == f"https://www.googleapis.com/compute/v1/projects/{PROJECT}/aggregated/instances"
        page = "aggregated_instances_page2.json" if (params or {}).get("pageToken") else "aggregated_instances_page1.json"
        data = json.loads((FIXTURES / page).read_text())
        if params and params.get("pageToken"):
            assert params["pageToken"] == json.loads((FIXTURES / "aggregated_instances_page1.json").read_text())["nextPageToken"]
        return _Response(data)


@pytest.fixture()
def inventory(monkeypatch):
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader
    from ansible.plugins.loader import init_plugin_loader
    from ansible.vars.manager import VariableManager

    init_plugin_loader([])
    plugin = importlib.import_module("ansible_collections.google.cloud.plugins.inventory.gcp_compute")
    monkeypatch.setattr(plugin, "GcpSession", _RecordedSession)
    monkeypatch.setenv("GCP_AUTH_KIND", "application")
    _RecordedSession.requests = []
    loader = DataLoader()
    manager = InventoryManager(loader=loader, sources=[str(ROOT / "inventories" / "gcp")])
    return manager, VariableManager(loader=loader, inventory=manager)


def _hosts(manager, group):
    return sorted(h.name for h in manager.groups[group].get_hosts())


def test_the_plugin_asks_for_this_cluster_only_and_follows_the_pages(inventory):
    assert [r["params"].get("filter") for r in _RecordedSession.requests] == [f"labels.sparkfleet-cluster = {CLUSTER}"] * 2
    assert [bool(r["params"].get("pageToken")) for r in _RecordedSession.requests] == [False, True]


def test_machine_role_groups_from_the_label(inventory):
    manager = inventory[0]
    c = CLUSTER
    assert _hosts(manager, "role_master") == [f"{c}-master"]
    assert _hosts(manager, "role_hub") == [f"{c}-hub"]
    assert _hosts(manager, "role_worker") == [f"{c}-worker-1", f"{c}-worker-2"]
    assert _hosts(manager, "role_gpu_worker") == [f"{c}-gpu-worker-1"]
    # worker-9 is in a zone the inventory does not list.
    assert f"{c}-worker-9" not in manager.hosts


def test_component_groups_from_components_yml(inventory):
    manager = inventory[0]
    c = CLUSTER
    assert _hosts(manager, "spark_masters") == [f"{c}-master"]
    assert _hosts(manager, "spark_workers") == [f"{c}-gpu-worker-1", f"{c}-worker-1", f"{c}-worker-2"]
    assert _hosts(manager, "gpu_workers") == [f"{c}-gpu-worker-1"]
    assert _hosts(manager, "swarm_workers") == [f"{c}-gpu-worker-1", f"{c}-worker-1", f"{c}-worker-2"]
    assert _hosts(manager, "hub") == _hosts(manager, "swarm_managers") == [f"{c}-hub"]
    assert _hosts(manager, "notebook") == []


def test_host_variables(inventory):
    manager, variables = inventory
    expected = {"master": "10.128.0.2", "hub": "10.128.0.3", "worker-1": "10.128.0.4", "worker-2": "10.128.0.5",
                "gpu-worker-1": "10.128.0.6"}
    for suffix, address in expected.items():
        host = manager.get_host(f"{CLUSTER}-{suffix}")
        hostvars = host.get_vars()
        # The private address, also for a machine without an external one (worker-2).
        assert hostvars["ansible_host"] == address
        assert hostvars["sparkfleet_cluster_name"] == CLUSTER
        assert hostvars["gcp_zone"] == "us-central1-a"
        assert hostvars["gcp_project"] == PROJECT
        assert hostvars["gcp_labels"]["sparkfleet-cluster"] == CLUSTER
        # The instance's attributes carry a prefix: no reserved name (`tags`) among the host's variables.
        assert "tags" not in hostvars and hostvars["gcp_tags"]["items"] == [CLUSTER]
    gpu = manager.get_host(f"{CLUSTER}-gpu-worker-1").get_vars()
    assert gpu["gcp_guestAccelerators"][0]["acceleratorType"].endswith("/acceleratorTypes/nvidia-tesla-t4")
    # The inventory directory's group_vars come with it.
    allvars = variables.get_vars(host=manager.get_host(f"{CLUSTER}-master"))
    assert allvars["sparkfleet_provider"] == "gcp"
    assert allvars["sparkfleet_cluster_name"] == CLUSTER
    assert allvars["ansible_user"] == "admin"
