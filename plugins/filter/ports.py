# -*- coding: utf-8 -*-
# Copyright: sparkfleet contributors
# Apache License 2.0
"""Port filter: the ports the daemons of one host listen on must be port numbers, and distinct.

``port_problems(ports, host, claimed={})``
    ``ports`` maps the port variables of the daemons a role runs on ``host`` to their values
    (``{'spark_master_webui_port': 8080, 'spark_history_webui_port': 18080}``); ``claimed`` maps those
    of the roles that checked this host before (each role adds its own after its check). Each value
    must be an integer from 1 to 65535, and no two variables may hold the same port: one sentence per
    problem, naming the variables and the host.
"""

from __future__ import annotations


def _port(value):
    """The value as a port number, or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        number = value
    elif isinstance(value, str) and value.strip().isdigit():
        number = int(value.strip())
    else:
        return None
    return number if 1 <= number <= 65535 else None


def port_problems(ports, host, claimed=None):
    """Sentences about out-of-range values in ports and ports held by two variables of this host."""
    claimed = {k: v for k, v in (claimed or {}).items() if k not in ports}
    problems, holders = [], {}
    for name, value in claimed.items():
        number = _port(value)
        if number is not None:
            holders.setdefault(number, name)
    for name in sorted(ports):
        value = ports[name]
        number = _port(value)
        if number is None:
            problems.append(f"{name} of {host} is {value!r}: a port must be an integer from 1 to 65535; set {name} to one.")
            continue
        if number in holders:
            problems.append(
                f"{holders[number]} and {name} of {host} are both {number}: two daemons of one host cannot listen on "
                f"the same port; give one of them another port.")
        else:
            holders[number] = name
    return problems


class FilterModule:
    """sparkfleet port filter."""

    def filters(self):
        return {"port_problems": port_problems}
