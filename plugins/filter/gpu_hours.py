# -*- coding: utf-8 -*-
# Copyright: sparkfleet contributors
# Apache License 2.0
"""GPU-hours per hub user and group, from the Swarm's tasks and the hub's users.

``gpu_task_usage(ledger, tasks, services=None, kind='NVIDIA-GPU', now=None)``
    The ledger of GPU holdings brought up to date with the Swarm's records: ``tasks`` and
    ``services`` as the Docker engine's API lists them on a manager (``GET /tasks``,
    ``GET /services``). Each task that was assigned GPUs of ``kind`` is one entry
    ``{task, service, user, node, shares, start, end, seen}``: ``user`` the hub user of a notebook
    (``JUPYTERHUB_USER`` in its container's environment; empty for other services), ``shares`` the
    GPU shares it was given, ``start`` its creation (Swarm assigns a task's GPUs when it schedules
    it, and a task waiting for GPUs has none), ``end`` the time it stopped (None while it runs),
    ``seen`` when it was last listed. The Swarm forgets a server's tasks when the hub removes its
    service: an entry still open but no longer listed ends at the last time it was seen.
    Entries of ``ledger`` (the previous run's result) are kept, so a report run regularly keeps
    the history the Swarm drops.

``gpu_hours(ledger, hub_users=None, since=None, until=None, now=None, shares_per_gpu=1)``
    The report: GPU-hours of each hub user (their tasks' shares times the time they held them,
    within [since, until], divided by ``shares_per_gpu``), of each hub group (the sum of its
    members': a user in two groups counts in both), and of the services no hub user holds.
    ``hub_users`` is the hub's ``GET /hub/api/users`` (each with ``name`` and ``groups``).

``gpu_hours_table(report)``
    The report as lines of text, for an admin's terminal.

Times are ISO 8601 strings (the engine's nanoseconds are cut to microseconds) or datetimes;
``now`` defaults to the current time, in UTC.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

DEFAULT_KIND = "NVIDIA-GPU"
_HUB_USER_ENV = "JUPYTERHUB_USER="
# Task states after which a task holds nothing (swarmkit's api.TaskState).
_ENDED = {"complete", "shutdown", "failed", "rejected", "remove", "orphaned"}
_TIME = re.compile(r"^(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:?\d{2})?$")
_ZERO_TIME = "0001-01-01T00:00:00Z"


def parse_time(value, what="a time"):
    """A UTC datetime from an ISO 8601 string (any number of fraction digits) or a datetime."""
    if isinstance(value, datetime.datetime):
        return value if value.tzinfo else value.replace(tzinfo=datetime.timezone.utc)
    match = _TIME.match(str(value or "").strip())
    if not match:
        raise AnsibleFilterError(f"{what} must be an ISO 8601 time like 2026-11-28T21:04:05Z, got {value!r}")
    base, fraction, zone = match.groups()
    text = base.replace(" ", "T") + "." + (fraction or "0")[:6].ljust(6, "0")
    zone = zone or "Z"
    text += "+00:00" if zone == "Z" else zone if ":" in zone else zone[:3] + ":" + zone[3:]
    return datetime.datetime.fromisoformat(text).astimezone(datetime.timezone.utc)


def format_time(value):
    return value.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ") if value else None


def _now(now):
    return parse_time(now, "now") if now is not None else datetime.datetime.now(datetime.timezone.utc)


def _list(value, what):
    if value is None:
        return []
    if isinstance(value, (str, bytes, Mapping)):
        raise AnsibleFilterError(f"{what} must be a list (the API's JSON array), got {type(value).__name__}")
    return list(value)


def _shares(task, kind):
    """GPU shares of ``kind`` the Swarm gave the task: its assigned named resources (one per share).
    The Engine API names them ``GenericResources`` on the task (Docker 20.10, recorded in the lab);
    swarmkit's own name, ``AssignedGenericResources``, is read too."""
    count = 0
    for resource in task.get("AssignedGenericResources") or task.get("GenericResources") or []:
        for spec_name in ("NamedResourceSpec", "DiscreteResourceSpec"):
            spec = resource.get(spec_name)
            if spec and spec.get("Kind") == kind:
                count += 1 if spec_name == "NamedResourceSpec" else int(spec.get("Value") or 0)
    return count


def _hub_user(task):
    container = ((task.get("Spec") or {}).get("ContainerSpec") or {})
    return next((entry[len(_HUB_USER_ENV):] for entry in container.get("Env") or [] if entry.startswith(_HUB_USER_ENV)), "")


def gpu_task_usage(ledger, tasks, services=None, kind=DEFAULT_KIND, now=None):
    now = _now(now)
    names = {s.get("ID"): ((s.get("Spec") or {}).get("Name") or s.get("ID")) for s in _list(services, "services")}
    entries = {}
    for entry in _list(ledger, "the ledger"):
        if not isinstance(entry, Mapping) or not entry.get("task"):
            raise AnsibleFilterError(f"a ledger entry must be a dict with a task id, got {entry!r}")
        entries[entry["task"]] = dict(entry)
    listed = set()
    for task in _list(tasks, "tasks"):
        shares = _shares(task, kind)
        if not shares:
            continue
        status = task.get("Status") or {}
        state = status.get("State", "")
        start = parse_time(task.get("CreatedAt"), f"task {task.get('ID')}'s CreatedAt")
        end = None
        if state in _ENDED:
            end = parse_time(status.get("Timestamp") or task.get("UpdatedAt"), f"task {task.get('ID')}'s Status.Timestamp")
        entries[task["ID"]] = {
            "task": task["ID"],
            "service": names.get(task.get("ServiceID"), entries.get(task["ID"], {}).get("service") or task.get("ServiceID", "")),
            "user": _hub_user(task),
            "node": task.get("NodeID", ""),
            "shares": shares,
            "start": format_time(start),
            "end": format_time(end),
            "seen": format_time(now),
        }
        listed.add(task["ID"])
    for task_id, entry in entries.items():
        if task_id not in listed and entry.get("end") is None:
            # The Swarm forgot it (its service was removed) while it ran: it held its GPUs until then,
            # at least until it was last seen.
            entry["end"] = entry.get("seen") or entry["start"]
    return sorted(entries.values(), key=lambda e: (e["start"], e["task"]))


def _groups_of(hub_users):
    groups = {}
    for user in _list(hub_users, "hub_users"):
        if not isinstance(user, Mapping) or not user.get("name"):
            raise AnsibleFilterError(f"a hub user must be a dict with a name (GET /hub/api/users), got {user!r}")
        groups[user["name"]] = sorted(user.get("groups") or [])
    return groups


def _by_hours(rows, key):
    """Most GPU-hours first, then by name."""
    return sorted(rows.values(), key=lambda row: (-row["gpu_hours"], row[key]))


def gpu_hours(ledger, hub_users=None, since=None, until=None, now=None, shares_per_gpu=1):
    now = _now(now)
    since = parse_time(since, "since") if since is not None else None
    until = parse_time(until, "until") if until is not None else now
    if since is not None and since > until:
        raise AnsibleFilterError(f"since ({format_time(since)}) is after until ({format_time(until)})")
    try:
        per_gpu = int(shares_per_gpu)
    except (TypeError, ValueError):
        per_gpu = 0
    if isinstance(shares_per_gpu, bool) or per_gpu < 1:
        raise AnsibleFilterError(f"shares_per_gpu must be a positive integer, got {shares_per_gpu!r}")
    groups_of = _groups_of(hub_users)
    users, services = {}, {}
    total = 0.0
    for entry in _list(ledger, "the ledger"):
        start = parse_time(entry["start"], f"task {entry.get('task')}'s start")
        end = parse_time(entry["end"], f"task {entry.get('task')}'s end") if entry.get("end") else now
        start, end = max(start, since) if since else start, min(end, until)
        if end <= start:
            continue
        hours = (end - start).total_seconds() / 3600.0 * int(entry["shares"]) / per_gpu
        total += hours
        if entry.get("user"):
            row = users.setdefault(entry["user"], {"user": entry["user"], "gpu_hours": 0.0, "tasks": 0})
        else:
            row = services.setdefault(entry["service"], {"service": entry["service"], "gpu_hours": 0.0, "tasks": 0})
        row["gpu_hours"] += hours
        row["tasks"] += 1
    groups = {}
    for name, row in users.items():
        row["groups"] = groups_of.get(name, [])
        row["hub_user"] = name in groups_of
        for group in row["groups"]:
            members = groups.setdefault(group, {"group": group, "gpu_hours": 0.0, "users": []})
            members["gpu_hours"] += row["gpu_hours"]
            members["users"].append(name)
    for row in list(users.values()) + list(groups.values()) + list(services.values()):
        row["gpu_hours"] = round(row["gpu_hours"], 3)
    for row in groups.values():
        row["users"].sort()
    return {
        "since": format_time(since),
        "until": format_time(until),
        "shares_per_gpu": per_gpu,
        "total_gpu_hours": round(total, 3),
        "users": _by_hours(users, "user"),
        "groups": _by_hours(groups, "group"),
        "services": _by_hours(services, "service"),
    }


def gpu_hours_table(report):
    """The report as lines of text: the period and total, then a table of users, groups and services."""
    if not isinstance(report, Mapping) or "users" not in report:
        raise AnsibleFilterError(f"gpu_hours_table expects the report of sparkfleet.cluster.gpu_hours, got {report!r}")
    lines = ["GPU-hours from %s to %s: %.2f in all (%d share(s) per GPU)." % (
        report["since"] or "the start of the ledger", report["until"], report["total_gpu_hours"], report["shares_per_gpu"])]
    lines.append("%-24s %10s %6s  %s" % ("user", "GPU-hours", "tasks", "groups"))
    for row in report["users"]:
        groups = ", ".join(row["groups"]) or ("-" if row["hub_user"] else "(not a hub user now)")
        lines.append("%-24s %10.2f %6d  %s" % (row["user"], row["gpu_hours"], row["tasks"], groups))
    lines.append("%-24s %10s  %s" % ("group", "GPU-hours", "users"))
    for row in report["groups"]:
        lines.append("%-24s %10.2f  %s" % (row["group"], row["gpu_hours"], ", ".join(row["users"])))
    if report["services"]:
        lines.append("%-24s %10s %6s" % ("service (no hub user)", "GPU-hours", "tasks"))
        for row in report["services"]:
            lines.append("%-24s %10.2f %6d" % (row["service"], row["gpu_hours"], row["tasks"]))
    return lines


class FilterModule(object):
    def filters(self):
        return {"gpu_task_usage": gpu_task_usage, "gpu_hours": gpu_hours, "gpu_hours_table": gpu_hours_table}
