"""port_problems: the ports of one host's daemons are port numbers, and no two daemons share one."""

import pytest
import yaml

from conftest import ROOT, RoleRenderer, load_plugin

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


def _tasks(tasks):
    for task in tasks or []:
        yield task
        for key in ("block", "rescue", "always"):
            yield from _tasks(task.get(key))


def _port_roles():
    """(role, its int *_port options for daemons it runs) of every role that declares some."""
    # Ports these roles connect to, not ports they listen on: the master's Spark Connect port the
    # notebook host uses, and the ZooKeeper servers' port Spark's masters use.
    client_ports = {"notebook_host_spark_connect_port", "spark_zookeeper_port"}
    for spec_file in sorted((ROOT / "roles").glob("*/meta/argument_specs.yml")):
        options = yaml.safe_load(spec_file.read_text())["argument_specs"]["main"].get("options") or {}
        declared = {n for n, o in options.items() if n.endswith("_port") and (o or {}).get("type") == "int"}
        if declared - client_ports:
            yield spec_file.parent.parent.name, sorted(declared - client_ports), options


PORT_ROLES = list(_port_roles())


def test_the_layer_roles_declare_ports():
    assert {"spark", "hadoop", "jupyterhub", "zookeeper"} <= {role for role, _ports, _options in PORT_ROLES}


@pytest.mark.parametrize("role, declared, options", PORT_ROLES, ids=[role for role, _d, _o in PORT_ROLES])
def test_every_port_option_of_the_layer_roles_is_checked_somewhere(role, declared, options):
    """Each *_port option a role declares for a daemon it runs is in the port map its preflight hands
    the platform role's port check, on a host that runs all of the role's daemons (two hosts in every
    component group, every *_enabled switch on); with the defaults, the check finds no problem."""
    checks = [t for t in _tasks(yaml.safe_load((ROOT / "roles" / role / "tasks" / "validate.yml").read_text()))
              if (t.get("ansible.builtin.include_role") or {}).get("name") == "sparkfleet.cluster.platform"
              and t["ansible.builtin.include_role"].get("tasks_from") == "ports"]
    assert len(checks) == 1, f"{role}'s validate.yml does not run the platform role's port check once"
    components = yaml.safe_load((ROOT / "inventories" / "components.yml").read_text())
    switches = {n: True for n, o in options.items() if n.endswith("_enabled") and (o or {}).get("type") == "bool"}
    renderer = RoleRenderer(role, {group: ["h1", "h2"] for group in components}, extra=switches)
    checked = renderer.string(checks[0]["vars"]["platform_ports"], "h1")
    missing = sorted(set(declared) - set(checked))
    assert not missing, f"{role}: {missing} are not in the port map its preflight checks"
    assert ports.port_problems(checked, "h1") == []


SS = """\
LISTEN 0      128    0.0.0.0:22 0.0.0.0:* users:(("sshd",pid=39,fd=3))
LISTEN 0      128       [::]:22    [::]:* users:(("sshd",pid=39,fd=4))
LISTEN 0      511    0.0.0.0:8443 0.0.0.0:* users:(("nginx",pid=812,fd=6),("nginx",pid=811,fd=6))
LISTEN 0      4096 127.0.0.53%lo:53 0.0.0.0:* users:(("systemd-resolve",pid=300,fd=14))
LISTEN 0      50     [::ffff:127.0.0.1]:8998 *:*
"""


def test_listening_ports_reads_ss():
    assert ports.listening_ports(SS) == {22: ["sshd"], 53: ["systemd-resolve"], 8443: ["nginx"], 8998: []}
    assert ports.listening_ports("") == {}


def test_a_port_another_program_listens_on_is_named():
    listening = ports.listening_ports(SS)
    found = ports.port_problems({"ui_gateway_port": 22}, "m1", {}, listening, ["nginx"])
    assert found == ["ui_gateway_port of m1 is 22, a port sshd already listens on there (ss -ltnp shows it): give "
                     "ui_gateway_port a port no other program of m1 uses, or stop that program."]
    # A listener whose program ss could not name is another program too.
    assert "another program" in ports.port_problems({"livy_port": 8998}, "m1", {}, listening, ["java"])[0]


def test_a_port_the_role_s_own_program_holds_passes():
    # A re-run: nginx already serves the gateway's port; facts may hand the ports back as strings.
    listening = {str(port): names for port, names in ports.listening_ports(SS).items()}
    assert ports.port_problems({"ui_gateway_port": 8443}, "m1", {}, listening, ["nginx"]) == []
    assert ports.port_problems({"ui_gateway_port": 8080}, "m1", {}, listening, ["nginx"]) == []


def test_without_programs_the_listeners_are_not_checked():
    assert ports.port_problems({"ui_gateway_port": 22}, "m1", {}, ports.listening_ports(SS)) == []
