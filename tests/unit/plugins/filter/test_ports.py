"""port_problems: the ports of one host's daemons are port numbers, and no two daemons share one."""

import yaml

from conftest import ROOT, load_plugin

ports = load_plugin("filter", "ports")


def test_distinct_ports_in_range_pass():
    assert ports.port_problems({"spark_master_port": 7077, "spark_master_webui_port": "8080"}, "m1") == []
    assert ports.port_problems({"livy_port": 8998}, "m1", {"spark_master_port": 7077}) == []
    assert ports.port_problems({}, "m1", {"spark_master_port": 7077}) == []


def test_a_port_out_of_range_or_not_a_number_is_named_with_the_host():
    found = ports.port_problems({"spark_master_port": 70000, "spark_master_webui_port": 0, "livy_port": "http",
                                 "registry_port": True}, "m1")
    assert found == [
        "livy_port of m1 is 'http': a port must be an integer from 1 to 65535; set livy_port to one.",
        "registry_port of m1 is True: a port must be an integer from 1 to 65535; set registry_port to one.",
        "spark_master_port of m1 is 70000: a port must be an integer from 1 to 65535; set spark_master_port to one.",
        "spark_master_webui_port of m1 is 0: a port must be an integer from 1 to 65535; set spark_master_webui_port to one.",
    ]


def test_two_daemons_of_one_role_on_one_port_are_named():
    found = ports.port_problems({"spark_master_webui_port": 8080, "spark_history_webui_port": "8080"}, "m1")
    assert found == ["spark_history_webui_port and spark_master_webui_port of m1 are both 8080: two daemons of one "
                     "host cannot listen on the same port; give one of them another port."]


def test_a_port_another_role_holds_on_this_host_is_named():
    found = ports.port_problems({"jupyterhub_hub_port": 8081}, "m1", {"spark_worker_webui_port": 8081})
    assert found[0].startswith("spark_worker_webui_port and jupyterhub_hub_port of m1 are both 8081")


def test_a_role_checked_again_does_not_clash_with_its_own_record():
    # The real run checks again after the preflight recorded the same variables.
    assert ports.port_problems({"spark_master_port": 7077}, "m1", {"spark_master_port": 7077}) == []


def test_every_port_option_of_the_layer_roles_is_checked_somewhere():
    """Each *_port option a role declares for a daemon it runs appears in that role's port map."""
    # Ports these roles connect to, not ports they listen on: the master's Spark Connect port the
    # notebook host uses, and the ZooKeeper servers' port Spark's masters use.
    client_ports = {"notebook_host_spark_connect_port", "spark_zookeeper_port"}
    for spec_file in sorted((ROOT / "roles").glob("*/meta/argument_specs.yml")):
        role = spec_file.parent.parent.name
        options = yaml.safe_load(spec_file.read_text())["argument_specs"]["main"].get("options") or {}
        declared = {n for n, o in options.items() if n.endswith("_port") and (o or {}).get("type") == "int"}
        declared -= client_ports
        if not declared:
            continue
        role_vars = (ROOT / "roles" / role / "vars" / "main.yml").read_text()
        assert f"__{role}_host_ports" in role_vars, f"{role} declares ports but has no __{role}_host_ports"
        missing = sorted(n for n in declared if n not in role_vars.split(f"__{role}_host_ports", 1)[1])
        assert not missing, f"{role}: {missing} are not in __{role}_host_ports"
        assert f"platform_ports: \"{{{{ __{role}_host_ports }}}}\"" in (
            ROOT / "roles" / role / "tasks" / "validate.yml").read_text()
