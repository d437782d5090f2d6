# -*- coding: utf-8 -*-
# Copyright: sparkfleet contributors
# Apache License 2.0
"""The service role's filters.

``service_batches(hosts, size=1)``
    Rolling restarts: ``hosts`` (a list, kept in its order) cut into consecutive batches of
    ``size`` hosts. ``size`` is a positive integer, or a percentage string (``"25%"``) of
    the number of hosts, rounded down and never below one host. An empty list
    gives no batch.

``service_unit_files(units)``
    The ``sparkfleet.cluster.files`` entries of rendered units: each unit's
    ``/etc/systemd/system/<name>.service`` and, for a unit with a ``timer``, its ``.timer``,
    rendered from the service role's templates with the unit as ``item``, root's, 0644, kept
    (backup) for a revert.

``service_unit_names(names, timers)``
    What systemd starts, enables and restarts for each unit of ``names``: the name, or
    ``<name>.timer`` for a unit in ``timers`` (a timer's unit runs on its schedule; a restart
    of the service would run it now). Order kept.
"""

from __future__ import annotations

import re

from ansible.errors import AnsibleFilterError

_PERCENT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*$")


def batch_size(count, size):
    """How many hosts go in one batch, out of ``count``, for ``size`` (int or "N%")."""
    if isinstance(size, bool):
        raise AnsibleFilterError(f"the batch size must be a positive integer or a percentage like '25%', got {size!r}")
    if isinstance(size, str):
        match = _PERCENT.match(size)
        if match:
            percent = float(match.group(1))
            if not 0 < percent <= 100:
                raise AnsibleFilterError(f"a batch size percentage must be above 0% and at most 100%, got {size!r}")
            return max(1, int(count * percent / 100))
    try:
        number = int(size)
    except (TypeError, ValueError):
        raise AnsibleFilterError(f"the batch size must be a positive integer or a percentage like '25%', got {size!r}")
    if number < 1:
        raise AnsibleFilterError(f"the batch size must be at least 1, got {size!r}")
    return number


def service_batches(hosts, size=1):
    if isinstance(hosts, (str, bytes)) or not hasattr(hosts, "__iter__"):
        raise AnsibleFilterError(f"service_batches expects a list of hosts, got {hosts!r}")
    hosts = list(hosts)
    step = batch_size(len(hosts), size)
    return [hosts[i:i + step] for i in range(0, len(hosts), step)]


def service_unit_files(units):
    if isinstance(units, (str, bytes, dict)) or not hasattr(units, "__iter__"):
        raise AnsibleFilterError(f"service_unit_files expects a list of units, got {units!r}")
    entries = []
    for unit in units:
        kinds = ["service"] + (["timer"] if unit.get("timer") is not None else [])
        entries.extend({"path": f"/etc/systemd/system/{unit['name']}.{kind}", "template": f"unit.{kind}.j2",
                        "vars": {"item": unit}, "owner": "root", "group": "root", "mode": "0644", "backup": True}
                       for kind in kinds)
    return entries


def service_unit_names(names, timers):
    if isinstance(names, (str, bytes, dict)) or not hasattr(names, "__iter__"):
        raise AnsibleFilterError(f"service_unit_names expects a list of unit names, got {names!r}")
    timers = set(timers)
    return [f"{name}.timer" if name in timers else name for name in names]


class FilterModule(object):
    def filters(self):
        return {"service_batches": service_batches, "service_unit_files": service_unit_files,
                "service_unit_names": service_unit_names}
