# -*- coding: utf-8 -*-
# Copyright: sparkfleet contributors
# Apache License 2.0
"""Address filter: the addresses other hosts reach a host from, out of its gathered facts.

``host_addresses(facts, skip_interfaces=CONTAINER_BRIDGES)``
    ``facts`` is one host's ``ansible_facts`` or a list of them. Returns the IPv4 and IPv6
    addresses of their interfaces but loopback, leaving out the interfaces whose names match
    ``skip_interfaces`` (by default the bridges and veth pairs a container engine makes: their
    addresses are local to the host and appear only once the engine runs, so facts gathered before
    and after Docker's install would otherwise disagree) and IPv6 link-local addresses. Facts
    without per-interface entries fall back to ``all_ipv4_addresses`` and ``all_ipv6_addresses``.
"""

from __future__ import annotations

import re

# docker0, docker_gwbridge, a user network's br-<12 hex digits>, veth pairs.
CONTAINER_BRIDGES = r"^(docker0|docker_gwbridge|br-[0-9a-f]{12}|veth[0-9a-zA-Z]*)$"


def _link_local(address):
    """Link-local IPv6 and loopback addresses: no other host reaches them (gathered facts leave
    loopback out of all_ipv4_addresses and all_ipv6_addresses too)."""
    return address.lower().startswith("fe80:") or address.startswith("127.") or address == "::1"


def _one(facts, skip):
    if not isinstance(facts, dict):
        return []
    names = facts.get("interfaces")
    if not isinstance(names, (list, tuple)):
        return [a for a in list(facts.get("all_ipv4_addresses") or []) + list(facts.get("all_ipv6_addresses") or [])
                if not _link_local(a)]
    out = []
    for name in names:
        if skip.match(name):
            continue
        # Gathered facts name an interface's entry with '-' as '_' (ansible's fact namespace).
        entry = facts.get(name) or facts.get(name.replace("-", "_")) or {}
        ipv4 = entry.get("ipv4") or {}
        v4 = [ipv4] if isinstance(ipv4, dict) else list(ipv4)
        for item in v4 + list(entry.get("ipv4_secondaries") or []) + list(entry.get("ipv6") or []):
            address = (item or {}).get("address")
            if address and not _link_local(address) and address not in out:
                out.append(address)
    return out


def host_addresses(facts, skip_interfaces=CONTAINER_BRIDGES):
    """The reachable addresses in one host's facts, or in a list of hosts' facts, in order."""
    skip = re.compile(skip_interfaces)
    out = []
    for one in facts if isinstance(facts, (list, tuple)) else [facts]:
        out += [a for a in _one(one, skip) if a not in out]
    return out


class FilterModule:
    """sparkfleet address filter."""

    def filters(self):
        return {"host_addresses": host_addresses}
