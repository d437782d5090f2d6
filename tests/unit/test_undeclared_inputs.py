"""undeclared_inputs: mistyped variable names (a role's prefix, declared by no role) are found,
with the closest declared name; the collection's own inventories and scenarios have none."""

import importlib.util
import pathlib

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
_SPEC = importlib.util.spec_from_file_location("sf_inputs", ROOT / "plugins" / "filter" / "inputs.py")
inputs = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(inputs)
ROLES = str(ROOT / "roles")


def test_declared_names_come_from_specs_defaults_and_published_results():
    known = inputs.declared_inputs(ROLES)
    names = known["names"]
    assert "spark_worker_memory_mb" in names                # an option of spark's main entry point
    assert "service_nginx_site" in names                    # an option of another entry point (service: nginx)
    assert "swarm_manager_address" in names                 # a result the swarm role publishes (set_fact)
    assert "spark_smoke_test" in names                      # published by spark's smoke_test entry point
    assert not any(n.startswith("__") for n in names)       # role internals are not inputs
    assert {"spark_", "common_", "notebook_host_", "nvidia_driver_", "shared_storage_"} <= set(known["prefixes"])
    # Longest first, so that a name is matched to the most specific role prefix.
    assert [len(p) for p in known["prefixes"]] == sorted((len(p) for p in known["prefixes"]), reverse=True)


def test_a_mistyped_name_is_found_with_the_closest_declared_name():
    hostvars = {
        "m1": {"spark_worker_memry_mb": 4096, "spark_worker_memory_mb": 2048, "ansible_host": "10.0.0.1",
               "sparkfleet_cluster_name": "c", "lab_image": "x", "extra_ca_certificates": [], "commonplace": 1},
        "w1": {"spark_worker_memry_mb": 4096, "notebook_host_jupyterlab_prot": 1, "docker_zzz_qqq": True},
    }
    found = inputs.find_undeclared(hostvars, ["m1", "w1"], ROLES)
    by_name = {f["name"]: f for f in found}
    assert sorted(by_name) == ["docker_zzz_qqq", "notebook_host_jupyterlab_prot", "spark_worker_memry_mb"]
    assert by_name["spark_worker_memry_mb"]["hosts"] == ["m1", "w1"]
    assert by_name["spark_worker_memry_mb"]["suggestion"] == "spark_worker_memory_mb"
    assert by_name["notebook_host_jupyterlab_prot"]["suggestion"] == "notebook_host_jupyterlab_port"
    assert by_name["docker_zzz_qqq"]["suggestion"] == ""
    assert by_name["spark_worker_memry_mb"]["message"] == (
        "spark_worker_memry_mb (set for m1, w1): no role of sparkfleet.cluster declares it; "
        "did you mean spark_worker_memory_mb?")
    assert by_name["docker_zzz_qqq"]["message"].endswith("declares it.")


def test_nothing_is_found_on_a_clean_host():
    assert inputs.find_undeclared({"h": {"spark_version": "4.0.1", "inventory_hostname": "h"}}, ["h"], ROLES) == []


def test_every_option_carries_its_role_prefix():
    # The check relies on it: a role's inputs start with the role's name (one documented exception).
    for spec_file in sorted((ROOT / "roles").glob("*/meta/argument_specs.yml")):
        role = spec_file.parent.parent.name
        for entry, spec in yaml.safe_load(spec_file.read_text())["argument_specs"].items():
            for name in (spec or {}).get("options") or {}:
                assert name.startswith(role + "_") or name == "extra_ca_certificates", f"{role}:{entry} {name}"


def _variable_names(node, out):
    if isinstance(node, dict):
        for key, value in node.items():
            out.add(key)
            _variable_names(value, out)


def test_the_collections_own_inventories_and_scenarios_have_no_undeclared_names():
    known = inputs.declared_inputs(ROLES)
    names = set()
    for path in (ROOT / "inventories").glob("*/group_vars/**/*.yml"):
        _variable_names(yaml.safe_load(path.read_text()) or {}, names)
    for path in (ROOT / "molecule").glob("*/molecule.yml"):
        inventory = (yaml.safe_load(path.read_text()).get("provisioner") or {}).get("inventory") or {}
        for part in ("group_vars", "host_vars"):
            for variables in (inventory.get(part) or {}).values():
                names.update(variables or {})
    suspicious = {n for n in names if n not in known["names"] and any(n.startswith(p) for p in known["prefixes"])}
    assert suspicious == set()


def test_the_filter_reads_the_collections_own_roles():
    assert inputs.undeclared_inputs({"h": {"spark_worker_memry_mb": 1}}, ["h"])[0]["suggestion"] == "spark_worker_memory_mb"
