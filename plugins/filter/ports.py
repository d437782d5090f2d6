# -*- coding: utf-8 -*-
# Copyright: sparkfleet contributors
# Apache License 2.0
"""Port filters: the ports the daemons of one host listen on must be port numbers, distinct, and
free of other programs.

``port_problems(ports, host, claimed={}, listening={}, programs=[])``
    ``ports`` maps the port variables of the daemons a role runs on ``host`` to their values
    (``{'spark_master_webui_port': 8080, 'spark_history_webui_port': 18080}``); ``claimed`` maps those
    of the roles that checked this host before (each role adds its own after its check). Each value
    must be an integer from 1 to 65535, and no two variables may hold the same port. With
    ``programs``, the names of the programs the role runs there, a port that ``listening`` (from
    ``listening_ports``) shows held by any other program is refused too: the daemon could not bind
    it. One sentence per problem, naming the variables and the host.

``listening_ports(text)``
    The TCP ports programs listen on, from the output of ``ss -Hltnp``: ``{port: [program, ...]}``.
"""

from __future__ import annotations

import re

# ss -p: users:(("sshd",pid=39,fd=3),("sshd",pid=40,fd=3))
_PROGRAM = re.compile(r'\("((?:[^"\\]|\\.)*)",pid=')


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


def listening_ports(text):
    """{port: sorted program names} of the TCP sockets ``ss -Hltnp`` lists as listening."""
    found = {}
    for line in (text or "").splitlines():
        fields = line.split()
        if len(fields) < 4:
            continue
        # State, Recv-Q, Send-Q, Local Address:Port, ... ([::]:22, 0.0.0.0:22, *:22, 127.0.0.1%lo:53)
        local = fields[3] if fields[0] == "LISTEN" else fields[2]
        port = local.rsplit(":", 1)[-1]
        if not port.isdigit():
            continue
        names = found.setdefault(int(port), set())
        names.update(_PROGRAM.findall(line))
    return {port: sorted(names) for port, names in sorted(found.items())}


def _listeners(listening):
    """``listening`` with integer keys (a fact's keys may come back as strings)."""
    result = {}
    for port, names in (listening or {}).items():
        number = _port(port)
        if number is not None:
            result[number] = list(names or [])
    return result


def port_problems(ports, host, claimed=None, listening=None, programs=None):
    """Sentences about out-of-range values in ports, ports held by two variables of this host, and
    (with programs) ports another program of the host listens on."""
    claimed = {k: v for k, v in (claimed or {}).items() if k not in ports}
    listeners = _listeners(listening) if programs else {}
    own = set(programs or [])
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
            continue
        holders[number] = name
        others = [program for program in listeners.get(number, []) if program not in own]
        if number in listeners and (others or not listeners[number]):
            who = ", ".join(others) or "another program"
            problems.append(
                f"{name} of {host} is {number}, a port {who} already listens on there (ss -ltnp shows it): "
                f"give {name} a port no other program of {host} uses, or stop that program.")
    return problems


class FilterModule:
    """sparkfleet port filter."""

    def filters(self):
        return {"port_problems": port_problems, "listening_ports": listening_ports}
