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


# --- wrongly_typed_inputs: list and dict options given with the wrong shape -------------------------

def test_declared_types_are_the_list_and_dict_options_of_the_specs():
    types = inputs.declared_types(ROLES)
    assert types["spark_users"] == "list"
    assert types["extra_ca_certificates"] == "list"
    assert types["common_packages"] == "list"
    assert types["common_sysctl"] == "dict"
    assert "spark_worker_cores" not in types and "spark_version" not in types


def test_well_shaped_values_pass():
    hostvars = {"h": {"spark_users": ["alice"], "common_packages": [], "common_sysctl": {"vm.swappiness": 1},
                      "extra_ca_certificates": [], "spark_gpu_addresses": None, "spark_version": "4.0.1",
                      "spark_worker_cores": "2", "ansible_host": "10.0.0.1"}}
    assert inputs.find_wrongly_typed(hostvars, ["h"], ROLES) == []


def test_a_string_for_a_list_and_a_string_or_list_for_a_dict_are_reported_by_name():
    pem = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ\n-----END CERTIFICATE-----\n"
    hostvars = {
        "m1": {"spark_users": "alice", "extra_ca_certificates": pem, "common_packages": "vim",
               "common_sysctl": "vm.swappiness=1"},
        "w1": {"spark_users": "alice", "swarm_node_labels": ["zone=a"], "docker_users": 5},
    }
    found = inputs.find_wrongly_typed(hostvars, ["m1", "w1"], ROLES)
    by_name = {f["name"]: f for f in found}
    assert sorted(by_name) == ["common_packages", "common_sysctl", "docker_users", "extra_ca_certificates",
                               "spark_users", "swarm_node_labels"]
    assert by_name["spark_users"]["hosts"] == ["m1", "w1"]
    assert by_name["spark_users"]["message"] == (
        "spark_users must be a list (the type its argument spec declares), got the string 'alice' (set for m1, w1): "
        "write it as a YAML list, e.g. spark_users: ['alice'].")
    assert by_name["common_packages"]["message"].startswith("common_packages must be a list")
    assert "got the string '-----BEGIN CERTIFICATE----- MIIB" in by_name["extra_ca_certificates"]["message"]
    assert by_name["common_sysctl"]["expected"] == "dict"
    assert "common_sysctl must be a dict (the type its argument spec declares), got the string 'vm.swappiness=1'" in (
        by_name["common_sysctl"]["message"])
    assert "got the list ['zone=a']" in by_name["swarm_node_labels"]["message"]
    assert "got the number 5" in by_name["docker_users"]["message"]


def test_the_shared_mechanisms_int_and_bool_options_are_checked_as_ansible_would():
    types = inputs.declared_types(ROLES)
    assert types["platform_apt_cache_valid_time"] == "int" and types["platform_apt_force"] == "bool"
    assert types["secrets_length"] == "int" and types["download_timeout"] == "int"
    assert "spark_worker_cores" not in types  # a component role's: its own argument check runs
    good = {"h": {"platform_apt_cache_valid_time": "600", "secrets_length": 32, "platform_apt_force": "yes",
                  "download_timeout": 60}}
    assert inputs.find_wrongly_typed(good, ["h"], ROLES) == []
    bad = {"h": {"platform_apt_cache_valid_time": "soon", "platform_apt_force": "maybe", "secrets_length": True}}
    by_name = {f["name"]: f for f in inputs.find_wrongly_typed(bad, ["h"], ROLES)}
    assert sorted(by_name) == ["platform_apt_cache_valid_time", "platform_apt_force", "secrets_length"]
    assert by_name["platform_apt_cache_valid_time"]["message"] == (
        "platform_apt_cache_valid_time must be an integer (the type its argument spec declares), got the string "
        "'soon' (set for h): write a whole number, e.g. platform_apt_cache_valid_time: 3600.")
    assert by_name["platform_apt_force"]["message"].startswith("platform_apt_force must be a boolean")
    assert "got the boolean True" in by_name["secrets_length"]["message"]


def test_a_value_that_cannot_be_resolved_is_left_to_the_role():
    class Unresolvable(dict):
        def __getitem__(self, name):
            raise RuntimeError(f"'{name}' is undefined")

    assert inputs.find_wrongly_typed({"h": Unresolvable(spark_users="{{ nope }}")}, ["h"], ROLES) == []


def test_the_collections_own_inventories_and_scenarios_give_lists_as_lists():
    types = inputs.declared_types(ROLES)
    variables = []
    for path in (ROOT / "inventories").glob("*/group_vars/**/*.yml"):
        variables.append(yaml.safe_load(path.read_text()) or {})
    for path in (ROOT / "molecule").glob("*/molecule.yml"):
        inventory = (yaml.safe_load(path.read_text()).get("provisioner") or {}).get("inventory") or {}
        for part in ("group_vars", "host_vars"):
            variables.extend((inventory.get(part) or {}).values())
    config = yaml.safe_load((ROOT / ".config" / "molecule" / "config.yml").read_text())
    variables.extend(config["provisioner"]["inventory"]["group_vars"].values())
    for group in variables:
        for name, value in (group or {}).items():
            if name in types and not (isinstance(value, str) and "{{" in value):
                assert not inputs._wrong_type(types[name], value), name  # pylint: disable=protected-access


def test_the_type_filter_reads_the_collections_own_roles():
    assert inputs.wrongly_typed_inputs({"h": {"spark_users": "alice"}}, ["h"])[0]["name"] == "spark_users"
