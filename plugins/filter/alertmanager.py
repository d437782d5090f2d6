# -*- coding: utf-8 -*-
# Copyright: sparkfleet contributors
# Apache License 2.0
"""The alerts that fire, from Alertmanager's API, for `make status` (playbooks/status.yml).

``alertmanager_firing(alerts, hosts=None, addresses=None, now=None)``
    Alertmanager's ``GET /api/v2/alerts`` answer (a list of alerts, each with ``labels``,
    ``annotations``, ``startsAt``, ``endsAt`` and ``status``) reduced to the alerts a team is
    notified of: active, neither silenced nor inhibited (Alertmanager itself leaves out the alerts
    that ended, by its own clock, which the controller's may not agree with). Each one is
    ``{alertname, severity, host, instance, since, age, summary, fingerprint, labels}``, most severe first,
    then the oldest. ``host`` is the inventory host the alert concerns: its ``host`` label (the
    monitoring role labels every scrape target with its inventory name), else its ``instance``
    (``address:port``) when the address is an inventory host's name or one of its ``addresses``;
    empty when it concerns no host of ``hosts`` (a cluster-wide alert, like NotebooksPending).

``alertmanager_report(result, server, hosts=None, addresses=None, now=None)``
    What status prints, from the result of the ``ansible.builtin.uri`` task that asked Alertmanager
    on ``server`` (the monitoring host): ``{answered, alerts, problems, lines}``. ``problems`` maps
    each inventory host to its alerts in plain words (the "what is wrong" column); ``lines`` is one
    line when nothing fires or Alertmanager did not answer, else a table of the firing alerts.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

# Alertmanager's own order of severities is none; these are the ones the collection's rules set.
_SEVERITY_ORDER = {"critical": 0, "error": 1, "warning": 2, "info": 3}
_TIME = re.compile(r"^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:?\d{2})?$")
# The uri module's failure message starts with the status it wanted; the reason follows.
_URI_PREFIX = re.compile(r"^Status code was -?\d+ and not \[[^\]]*\]: (?:Request failed: )?")


def _time(value, what):
    """A UTC datetime from Alertmanager's RFC 3339 times (milliseconds, or Go's nanoseconds)."""
    if isinstance(value, datetime.datetime):
        return value if value.tzinfo else value.replace(tzinfo=datetime.timezone.utc)
    match = _TIME.match(str(value or "").strip())
    if not match:
        raise AnsibleFilterError(f"{what} must be an RFC 3339 time like 2026-11-28T09:14:05.123Z, got {value!r}")
    day, clock, fraction, zone = match.groups()
    zone = zone or "Z"
    zone = "+00:00" if zone == "Z" else zone if ":" in zone else zone[:3] + ":" + zone[3:]
    text = f"{day}T{clock}.{(fraction or '0')[:6].ljust(6, '0')}{zone}"
    return datetime.datetime.fromisoformat(text).astimezone(datetime.timezone.utc)


def _now(now):
    return _time(now, "now") if now is not None else datetime.datetime.now(datetime.timezone.utc)


def _age(delta):
    """A duration as an admin reads it: 45s, 12m, 3h05m, 2d04h."""
    seconds = max(int(delta.total_seconds()), 0)
    days, seconds = divmod(seconds, 86400)
    hours, seconds = divmod(seconds, 3600)
    minutes, seconds = divmod(seconds, 60)
    if days:
        return f"{days}d{hours:02d}h"
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m"
    return f"{seconds}s"


def _host_of_address(address):
    """The host part of an instance label: ``10.0.0.12:9100``, ``[fd00::12]:9100``, ``w2``."""
    address = str(address or "").strip()
    if address.startswith("["):
        return address[1:].split("]", 1)[0]
    if address.count(":") == 1:
        return address.split(":", 1)[0]
    return address


def _address_index(hosts, addresses):
    """Address -> inventory host, for the addresses exactly one host has (the lab's hosts may all
    be 127.0.0.1 with their own ports: such an address names no host)."""
    owners = {}
    for host, values in (addresses or {}).items():
        if host not in hosts:
            continue
        if isinstance(values, str):
            values = [values]
        for value in values or []:
            if value:
                owners.setdefault(str(value), set()).add(host)
    return {address: next(iter(found)) for address, found in owners.items() if len(found) == 1}


def _hosts(hosts):
    if hosts is None:
        return []
    if isinstance(hosts, (str, bytes)) or not all(isinstance(h, str) for h in hosts):
        raise AnsibleFilterError(f"hosts must be a list of inventory host names, got {hosts!r}")
    return list(hosts)


def _suppressed(alert):
    status = alert.get("status") or {}
    return (status.get("state", "active") != "active" or bool(status.get("silencedBy"))
            or bool(status.get("inhibitedBy")))


def alertmanager_firing(alerts, hosts=None, addresses=None, now=None):
    if alerts is None:
        return []
    if isinstance(alerts, (str, bytes, Mapping)):
        raise AnsibleFilterError(
            f"alertmanager_firing expects Alertmanager's /api/v2/alerts answer (a list), got {type(alerts).__name__}")
    now = _now(now)
    hosts = _hosts(hosts)
    known = set(hosts)
    by_address = _address_index(known, addresses)
    firing = []
    for alert in alerts:
        if not isinstance(alert, Mapping) or not isinstance(alert.get("labels"), Mapping):
            raise AnsibleFilterError(f"an alert of Alertmanager's answer must be a dict with labels, got {alert!r}")
        if _suppressed(alert):
            continue
        labels = alert["labels"]
        name = labels.get("alertname", "?")
        since = _time(alert.get("startsAt"), f"{name}'s startsAt")
        instance = str(labels.get("instance", ""))
        label_host = str(labels.get("host", ""))
        host = label_host if label_host in known else ""
        if not host and instance:
            address = _host_of_address(instance)
            host = address if address in known else by_address.get(address, "")
        annotations = alert.get("annotations") or {}
        firing.append({
            "alertname": name,
            "severity": str(labels.get("severity", "")),
            "host": host,
            "instance": instance,
            "since": since.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "age": _age(now - since),
            "summary": str(annotations.get("summary") or annotations.get("description") or ""),
            "fingerprint": alert.get("fingerprint", ""),
            "labels": dict(labels),
            "_order": (_SEVERITY_ORDER.get(str(labels.get("severity", "")), len(_SEVERITY_ORDER)), since, name,
                       host or label_host or instance),
        })
    firing.sort(key=lambda a: a["_order"])
    for alert in firing:
        del alert["_order"]
    return firing


def _concerns(alert):
    """The host column: the inventory host, else the host or instance the alert names."""
    return alert["host"] or alert["labels"].get("host") or alert["instance"] or "-"


def _table(alerts):
    rows = [["alert", "severity", "host", "since", "summary"]]
    rows += [[a["alertname"], a["severity"] or "-", _concerns(a), f"{a['since']} ({a['age']})", a["summary"] or "-"]
             for a in alerts]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return ["  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[-1] for row in rows]


def _no_answer(result, server):
    """Why the uri task has no list of alerts, in one line; None when it has one."""
    if not isinstance(result, Mapping) or not result:
        return f"not asked (the run stopped on {server} before)"
    if result.get("unreachable"):
        return f"{server} is unreachable over SSH"
    if result.get("skipped"):
        return f"not asked ({result.get('false_condition') or 'skipped'})"
    status = result.get("status")
    if status != 200:
        message = _URI_PREFIX.sub("", str(result.get("msg") or f"HTTP status {status}")).strip()
        return message or f"HTTP status {status}"
    if not isinstance(result.get("json"), list):
        return "its answer is not a list of alerts (is monitoring_alertmanager_path its route prefix?)"
    return None


def alertmanager_report(result, server, hosts=None, addresses=None, now=None):
    if not server:
        return {"answered": False, "alerts": [], "problems": {},
                "lines": ["alerts: no monitoring host (no host in the monitoring group or spark_masters)"]}
    why = _no_answer(result, server)
    if why is not None:
        return {"answered": False, "alerts": [], "problems": {},
                "lines": [f"alerts: Alertmanager on {server} did not answer: {why}"]}
    alerts = alertmanager_firing(result["json"], hosts, addresses, now)
    problems = {}
    for alert in alerts:
        if alert["host"]:
            words = f"alert {alert['alertname']}" + (f" ({alert['severity']})" if alert["severity"] else "")
            problems.setdefault(alert["host"], []).append(words + (f": {alert['summary']}" if alert["summary"] else ""))
    if not alerts:
        lines = [f"alerts: no alerts firing (Alertmanager on {server})"]
    else:
        lines = [f"alerts: {len(alerts)} firing (Alertmanager on {server}):"] + _table(alerts)
    return {"answered": True, "alerts": alerts, "problems": problems, "lines": lines}


class FilterModule(object):
    def filters(self):
        return {"alertmanager_firing": alertmanager_firing, "alertmanager_report": alertmanager_report}
