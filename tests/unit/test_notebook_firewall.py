"""The docker role's notebook firewall: its configuration rendered for a lab-like inventory (a master,
two workers, a hub) from the role's own defaults and vars, and the script that applies it
(roles/docker/files/notebook_firewall.py) run with stand-ins for docker and iptables."""

import json
import os
import socket
import stat
import subprocess
import sys

import pytest

from conftest import ROOT, RoleRenderer, facts

SCRIPT = ROOT / "roles" / "docker" / "files" / "notebook_firewall.py"
GROUPS = {"spark_masters": ["m1"], "spark_workers": ["w1", "w2"], "swarm_workers": ["w1", "w2"],
          "swarm_managers": ["hub"], "hub": ["hub"], "livy": ["m1"]}
ADDRESSES = {"m1": "10.0.0.1", "w1": "10.0.0.2", "w2": "10.0.0.3", "hub": "10.0.0.9"}
METADATA = ["169.254.169.254", "fd00:ec2::254"]


def _hostvars(**settings):
    out = {}
    for host, address in ADDRESSES.items():
        out[host] = {"ansible_facts": {**facts(address=address), "all_ipv4_addresses": [address],
                                       "all_ipv6_addresses": []}, **settings}
    out["m1"]["ansible_facts"]["all_ipv6_addresses"] = ["fe80::1", "fd00::1"]
    out["m1"]["spark_connect_enabled"] = True
    return out


def docker_role(hostvars=None, **extra):
    return RoleRenderer("docker", GROUPS, hostvars=hostvars or _hostvars(), extra=extra)


def config(host="w1", renderer=None):
    return json.loads((renderer or docker_role()).render("notebook-firewall.json.j2", host))


def test_a_worker_allows_exactly_the_hub_api_and_https_and_spark_connect():
    rendered = config()
    assert rendered["networks"] == ["docker_gwbridge"]
    assert rendered["allowed"] == [
        {"name": "jupyterhub-api hub", "addresses": ["10.0.0.9"], "port": 8081},
        {"name": "jupyterhub-https hub", "addresses": ["10.0.0.9"], "port": 443},
        {"name": "spark-connect m1", "addresses": ["10.0.0.1", "fd00::1"], "port": 15002},
    ]


def test_only_the_hub_may_open_connections_to_the_notebooks():
    assert config()["callers"] == ["10.0.0.9"]


def test_every_cluster_host_and_the_metadata_server_are_refused():
    refused = config()["refused"]
    assert sorted(refused) == sorted(list(ADDRESSES.values()) + ["fd00::1"] + METADATA)


def test_livy_and_the_operators_endpoints_and_networks_join_their_lists():
    hostvars = _hostvars(livy_enabled=True, livy_port=8999, jupyterhub_hub_port=8090)
    renderer = docker_role(hostvars, docker_notebook_firewall_refused_networks=["10.0.0.0/16"],
                           docker_notebook_firewall_allowed_endpoints=[
                               {"name": "pypi-mirror", "addresses": ["10.0.5.7"], "port": 443}])
    rendered = config(renderer=renderer)
    assert [(e["name"], e["port"]) for e in rendered["allowed"]] == [
        ("jupyterhub-api hub", 8090), ("jupyterhub-https hub", 443), ("spark-connect m1", 15002),
        ("livy m1", 8999), ("pypi-mirror", 443)]
    assert rendered["refused"][-1] == "10.0.0.0/16"


def test_connect_is_not_allowed_where_the_masters_run_none():
    hostvars = _hostvars()
    hostvars["m1"]["spark_connect_enabled"] = False
    assert [e["name"] for e in config(renderer=docker_role(hostvars))["allowed"]] == [
        "jupyterhub-api hub", "jupyterhub-https hub"]


@pytest.mark.parametrize("settings, expected", [
    ({}, {"w1": ["docker_gwbridge"], "w2": ["docker_gwbridge"], "hub": ["docker_gwbridge"], "m1": []}),
    # The lab keeps notebooks off the Swarm's manager.
    ({"jupyterhub_swarm_constraints": ["node.role == worker"]},
     {"w1": ["docker_gwbridge"], "w2": ["docker_gwbridge"], "hub": [], "m1": []}),
    ({"jupyterhub_spawner": "docker"}, {"w1": [], "w2": [], "hub": ["bridge"], "m1": []}),
    ({"jupyterhub_spawner": "docker", "jupyterhub_network": "notebooks"},
     {"w1": [], "w2": [], "hub": ["notebooks"], "m1": []}),
    ({"jupyterhub_spawner": "local"}, {"w1": [], "w2": [], "hub": [], "m1": []}),
])
def test_the_rules_go_where_notebook_containers_run(settings, expected):
    renderer = docker_role(**settings)
    found = {host: renderer.value("docker_notebook_firewall_networks", host) for host in expected}
    assert found == expected
    wanted = {host: renderer.value("__docker_notebook_firewall_wanted", host) for host in expected}
    assert wanted == {host: bool(networks) for host, networks in expected.items()}
    assert renderer.value("__docker_notebook_firewall_wanted", "w1") is bool(expected["w1"])


def test_the_switch_turns_it_off():
    assert docker_role(docker_notebook_firewall_enabled=False).value("__docker_notebook_firewall_wanted", "w1") is False


# --- The script ------------------------------------------------------------------------------------

def _stand_in(directory, name, body):
    path = directory / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


@pytest.fixture(name="bin_dir")
def fixture_bin_dir(tmp_path):
    """A PATH whose docker knows one user network (notebooks: br-0123456789ab) and one named bridge
    (named: nb0), and no other network."""
    directory = tmp_path / "bin"
    directory.mkdir()
    _stand_in(directory, "docker", 'for last; do :; done\ncase "$last" in\n'
              '  notebooks) echo "0123456789abcdef0123 <no value>";;\n'
              '  named) echo "fedcba9876543210 nb0";;\n'
              '  *) echo "Error: No such network: $last" >&2; exit 1;;\nesac\n')
    return directory


def run(args, bin_dir, tmp_path, document=None):
    if document is not None:
        path = tmp_path / "notebook-firewall.json"
        path.write_text(json.dumps(document))
        args = [*args, "--config", str(path)]
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env,
                          check=False)


def payloads(text):
    """The --print output as {4: [lines], 6: [lines]}."""
    parts = text.split("# ip6tables-restore --noflush\n")
    assert parts[0].startswith("# iptables-restore --noflush\n") and len(parts) == 2
    return {4: parts[0].splitlines()[1:], 6: [line for line in parts[1].splitlines() if line]}


def test_print_shows_the_whole_payload_of_the_rendered_configuration(bin_dir, tmp_path):
    result = run(["--print"], bin_dir, tmp_path, config())
    assert result.returncode == 0, result.stderr
    v4 = [line for line in payloads(result.stdout)[4] if line]
    assert v4 == [
        "*filter",
        ":SPARKFLEET-NOTEBOOKS-FWD - [0:0]",
        ":SPARKFLEET-NOTEBOOKS-IN - [0:0]",
        ":SPARKFLEET-NOTEBOOKS - [0:0]",
        ":SPARKFLEET-NOTEBOOKS-HOST - [0:0]",
        ":SPARKFLEET-NOTEBOOKS-INBOUND - [0:0]",
        "-I DOCKER-USER 1 -j SPARKFLEET-NOTEBOOKS-FWD",
        "-I INPUT 1 -j SPARKFLEET-NOTEBOOKS-IN",
        # docker_gwbridge is not a network of this docker: Docker's fixed name.
        "-A SPARKFLEET-NOTEBOOKS-FWD -i docker_gwbridge -g SPARKFLEET-NOTEBOOKS",
        "-A SPARKFLEET-NOTEBOOKS-FWD -o docker_gwbridge -g SPARKFLEET-NOTEBOOKS-INBOUND",
        "-A SPARKFLEET-NOTEBOOKS-IN -i docker_gwbridge -g SPARKFLEET-NOTEBOOKS-HOST",
        "-A SPARKFLEET-NOTEBOOKS -m conntrack --ctstate RELATED,ESTABLISHED -j RETURN",
        "-A SPARKFLEET-NOTEBOOKS -d 10.0.0.9 -p tcp -m tcp --dport 8081 -j RETURN",
        "-A SPARKFLEET-NOTEBOOKS -d 10.0.0.9 -p tcp -m tcp --dport 443 -j RETURN",
        "-A SPARKFLEET-NOTEBOOKS -d 10.0.0.1 -p tcp -m tcp --dport 15002 -j RETURN",
        "-A SPARKFLEET-NOTEBOOKS -p udp -m udp --dport 53 -j RETURN",
        "-A SPARKFLEET-NOTEBOOKS -p tcp -m tcp --dport 53 -j RETURN",
        *[f"-A SPARKFLEET-NOTEBOOKS -d {address} {rule}" for address in
          ["10.0.0.9", "10.0.0.1", "10.0.0.2", "10.0.0.3", "169.254.169.254"]  # groups["all"] order
          for rule in ("-p tcp -j REJECT --reject-with tcp-reset", "-j REJECT --reject-with icmp-port-unreachable")],
        "-A SPARKFLEET-NOTEBOOKS-HOST -m conntrack --ctstate RELATED,ESTABLISHED -j RETURN",
        "-A SPARKFLEET-NOTEBOOKS-HOST -d 10.0.0.9 -p tcp -m tcp --dport 8081 -j RETURN",
        "-A SPARKFLEET-NOTEBOOKS-HOST -d 10.0.0.9 -p tcp -m tcp --dport 443 -j RETURN",
        "-A SPARKFLEET-NOTEBOOKS-HOST -d 10.0.0.1 -p tcp -m tcp --dport 15002 -j RETURN",
        "-A SPARKFLEET-NOTEBOOKS-HOST -p udp -m udp --dport 53 -j RETURN",
        "-A SPARKFLEET-NOTEBOOKS-HOST -p tcp -m tcp --dport 53 -j RETURN",
        "-A SPARKFLEET-NOTEBOOKS-HOST -p tcp -j REJECT --reject-with tcp-reset",
        "-A SPARKFLEET-NOTEBOOKS-HOST -j REJECT --reject-with icmp-port-unreachable",
        # Into the notebooks: replies, and new connections from the hub (its proxy) only.
        "-A SPARKFLEET-NOTEBOOKS-INBOUND -m conntrack --ctstate RELATED,ESTABLISHED -j RETURN",
        "-A SPARKFLEET-NOTEBOOKS-INBOUND -s 10.0.0.9 -j RETURN",
        "-A SPARKFLEET-NOTEBOOKS-INBOUND -p tcp -j REJECT --reject-with tcp-reset",
        "-A SPARKFLEET-NOTEBOOKS-INBOUND -j REJECT --reject-with icmp-port-unreachable",
        "COMMIT",
    ]


def test_the_ipv6_payload_has_the_ipv6_addresses_only(bin_dir, tmp_path):
    v6 = payloads(run(["--print"], bin_dir, tmp_path, config()).stdout)[6]
    assert "-A SPARKFLEET-NOTEBOOKS -d fd00::1 -p tcp -m tcp --dport 15002 -j RETURN" in v6
    assert "-A SPARKFLEET-NOTEBOOKS -d fd00:ec2::254 -j REJECT --reject-with icmp6-port-unreachable" in v6
    assert not [line for line in v6 if "10.0.0." in line or "169.254" in line]
    assert v6[-2:] == ["-A SPARKFLEET-NOTEBOOKS-INBOUND -j REJECT --reject-with icmp6-port-unreachable", "COMMIT"]


def test_networks_are_found_by_their_bridges(bin_dir, tmp_path):
    document = {**config(), "networks": ["notebooks", "named", "bridge"]}
    v4 = payloads(run(["--print"], bin_dir, tmp_path, document).stdout)[4]
    dispatch = [line for line in v4 if line.startswith("-A SPARKFLEET-NOTEBOOKS-FWD")]
    assert dispatch == [line for bridge in ("br-0123456789ab", "docker0", "nb0")
                        for line in (f"-A SPARKFLEET-NOTEBOOKS-FWD -i {bridge} -g SPARKFLEET-NOTEBOOKS",
                                     f"-A SPARKFLEET-NOTEBOOKS-FWD -o {bridge} -g SPARKFLEET-NOTEBOOKS-INBOUND")]


def test_a_missing_network_fails_but_the_others_are_still_confined(bin_dir, tmp_path):
    result = run(["--print"], bin_dir, tmp_path, {**config(), "networks": ["gone", "notebooks"]})
    assert result.returncode == 1
    assert "the Docker network 'gone' does not exist on this host" in result.stderr
    assert "-A SPARKFLEET-NOTEBOOKS-FWD -i br-0123456789ab -g SPARKFLEET-NOTEBOOKS" in result.stdout


def test_a_bad_address_is_named(bin_dir, tmp_path):
    result = run(["--print"], bin_dir, tmp_path, {**config(), "refused": ["10.0.0.300"]})
    assert result.returncode == 1 and "refused: '10.0.0.300' is not an address or network" in result.stderr


def _iptables(bin_dir, tmp_path, listing):
    """iptables and iptables-restore stand-ins: `-S chain` prints `listing`'s lines for the chain (a
    chain not in it does not exist), restore keeps its input; ip6tables is unusable."""
    (tmp_path / "listing").write_text(json.dumps(listing))
    _stand_in(bin_dir, "iptables", f'exec {sys.executable} -c "import json,sys; l=json.load(open(\'{tmp_path}/listing\'));'
              ' c=sys.argv[-1]; print(chr(10).join(l[c])) if c in l else sys.exit(1)" "$@"\n')
    _stand_in(bin_dir, "iptables-restore", f'cat >> {tmp_path}/restored\n')
    _stand_in(bin_dir, "ip6tables", "exit 3\n")


def test_applying_adds_the_jumps_only_when_they_are_missing(bin_dir, tmp_path):
    _iptables(bin_dir, tmp_path, {"INPUT": ["-P INPUT ACCEPT"], "DOCKER-USER": ["-N DOCKER-USER", "-A DOCKER-USER -j RETURN"]})
    result = run([], bin_dir, tmp_path, config())
    assert result.returncode == 0, result.stderr
    assert "ip6tables is not usable here" in result.stderr
    first = (tmp_path / "restored").read_text().splitlines()
    assert [line for line in first if line.startswith("-I")] == [
        "-I DOCKER-USER 1 -j SPARKFLEET-NOTEBOOKS-FWD", "-I INPUT 1 -j SPARKFLEET-NOTEBOOKS-IN"]

    (tmp_path / "restored").unlink()
    _iptables(bin_dir, tmp_path, {"INPUT": ["-P INPUT ACCEPT", "-A INPUT -j SPARKFLEET-NOTEBOOKS-IN"],
                                  "DOCKER-USER": ["-N DOCKER-USER", "-A DOCKER-USER -j SPARKFLEET-NOTEBOOKS-FWD",
                                                  "-A DOCKER-USER -j RETURN"]})
    assert run([], bin_dir, tmp_path, config()).returncode == 0
    again = (tmp_path / "restored").read_text().splitlines()
    # The same chains declared (so flushed) and refilled; no second jump.
    assert again == [line for line in first if not line.startswith("-I")]


def test_applying_needs_dockers_chain(bin_dir, tmp_path):
    _iptables(bin_dir, tmp_path, {"INPUT": ["-P INPUT ACCEPT"]})
    result = run([], bin_dir, tmp_path, config())
    assert result.returncode == 1 and "there is no DOCKER-USER chain" in result.stderr
    assert not (tmp_path / "restored").exists()


def test_probe_tells_open_from_refused(bin_dir, tmp_path):
    with socket.socket() as listener, socket.socket() as closed:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        closed.bind(("127.0.0.1", 0))  # bound, not listening: connections are refused
        result = run(["--probe", f"127.0.0.1:{listener.getsockname()[1]}", f"127.0.0.1:{closed.getsockname()[1]}"],
                     bin_dir, tmp_path)
    found = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["result"] for r in found] == ["open", "refused"]
