"""The addresses other hosts reach a host from: container bridges left out."""

from conftest import load_plugin

addresses = load_plugin("filter", "addresses")


def hub_after_docker():
    """A hub's facts as gathered once Docker and the Swarm run (the lab's shape)."""
    return {
        "interfaces": ["lo", "eth0", "docker0", "docker_gwbridge", "br-3f2a9c1d0e7b", "veth1a2b3c"],
        "lo": {"device": "lo", "ipv4": {"address": "127.0.0.1"}, "ipv6": [{"address": "::1", "scope": "host"}]},
        "eth0": {"device": "eth0", "ipv4": {"address": "172.20.0.5"},
                 "ipv4_secondaries": [{"address": "172.20.0.50"}],
                 "ipv6": [{"address": "fe80::42:acff:fe14:5", "scope": "link"},
                          {"address": "fd00::5", "scope": "global"}]},
        "docker0": {"device": "docker0", "ipv4": {"address": "172.17.0.1"}, "type": "bridge"},
        "docker_gwbridge": {"device": "docker_gwbridge", "ipv4": {"address": "172.18.0.1"}, "type": "bridge"},
        "br_3f2a9c1d0e7b": {"device": "br-3f2a9c1d0e7b", "ipv4": {"address": "172.19.0.1"}, "type": "bridge"},
        "veth1a2b3c": {"device": "veth1a2b3c", "ipv6": [{"address": "fe80::1", "scope": "link"}]},
        "all_ipv4_addresses": ["172.20.0.5", "172.20.0.50", "172.17.0.1", "172.18.0.1", "172.19.0.1"],
        "all_ipv6_addresses": ["fe80::42:acff:fe14:5", "fd00::5", "fe80::1"],
    }


def hub_before_docker():
    facts = hub_after_docker()
    for name in ("docker0", "docker_gwbridge", "br-3f2a9c1d0e7b", "veth1a2b3c"):
        facts["interfaces"].remove(name)
    facts["all_ipv4_addresses"] = ["172.20.0.5", "172.20.0.50"]
    return facts


def test_container_bridges_loopback_and_link_local_addresses_are_left_out():
    assert addresses.host_addresses(hub_after_docker()) == ["172.20.0.5", "172.20.0.50", "fd00::5"]


def test_facts_from_before_and_after_dockers_install_give_the_same_addresses():
    assert addresses.host_addresses(hub_after_docker()) == addresses.host_addresses(hub_before_docker())


def test_a_bridge_of_the_administrators_own_is_kept():
    facts = hub_before_docker()
    facts["interfaces"].append("br0")
    facts["br0"] = {"device": "br0", "ipv4": {"address": "10.1.0.2"}, "type": "bridge"}
    assert "10.1.0.2" in addresses.host_addresses(facts)


def test_a_list_of_hosts_gives_each_address_once_and_the_pattern_can_be_changed():
    other = {"interfaces": ["eth0"], "eth0": {"ipv4": {"address": "172.20.0.6"}}}
    assert addresses.host_addresses([hub_before_docker(), other, other]) == [
        "172.20.0.5", "172.20.0.50", "fd00::5", "172.20.0.6"]
    assert "172.17.0.1" in addresses.host_addresses(hub_after_docker(), r"^$")


def test_facts_without_interface_entries_fall_back_to_the_address_lists():
    assert addresses.host_addresses({"all_ipv4_addresses": ["10.0.0.2"], "all_ipv6_addresses": ["fe80::2", "fd00::2"]}) == [
        "10.0.0.2", "fd00::2"]
    assert addresses.host_addresses([{}, None]) == []
