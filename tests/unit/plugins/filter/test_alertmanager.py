"""The alerts `make status` prints, from a recorded Alertmanager 0.25 answer (GET /api/v2/alerts, no filter,
so the suppressed ones are in it too): w2 down (HostDown, and its SparkWorkerDown inhibited by it), m1's
disk, an Xid on gpu1 (and an ECC alert on it someone silenced), notebooks pending (cluster-wide, no host),
a rule of the cluster's own that labels only the instance (w3's address), and a target labelled with a
host the inventory no longer has (w9)."""

import json

import pytest
from ansible.errors import AnsibleFilterError

from conftest import ROOT, load_plugin

alertmanager = load_plugin("filter", "alertmanager")

ALERTS = json.loads((ROOT / "tests" / "unit" / "plugins" / "filter" / "fixtures" / "alertmanager" / "alerts.json").read_text())
HOSTS = ["gpu1", "hub1", "m1", "w1", "w2", "w3"]
# ansible_host and the default IPv4 address of each host; the lab's hosts all share 127.0.0.1.
ADDRESSES = {"m1": ["10.0.0.2"], "w1": ["10.0.0.11", "127.0.0.1"], "w2": ["10.0.0.12", "127.0.0.1"],
             "w3": ["10.0.0.13", "127.0.0.1"], "gpu1": ["10.0.0.21"], "hub1": ["10.0.0.30"]}
NOW = "2026-11-28T12:00:00Z"


def answered(alerts=None):
    """The result of the status playbook's uri task when Alertmanager answers."""
    return {"status": 200, "json": ALERTS if alerts is None else alerts, "msg": "OK (unknown bytes)", "changed": False}


def report(result=None, server="m1"):
    return alertmanager.alertmanager_report(answered() if result is None else result, server, HOSTS, ADDRESSES, now=NOW)


def test_the_firing_alerts_most_severe_first_each_with_its_host():
    firing = alertmanager.alertmanager_firing(ALERTS, HOSTS, ADDRESSES, now=NOW)
    assert [(a["alertname"], a["severity"], a["host"], a["instance"], a["since"], a["age"]) for a in firing] == [
        ("HostDown", "critical", "w2", "10.0.0.12:9100", "2026-11-28T09:14:05Z", "2h45m"),
        ("GpuXidErrors", "critical", "gpu1", "10.0.0.21:9445", "2026-11-28T11:47:05Z", "12m"),
        ("ExporterDown", "warning", "", "10.0.0.19:9323", "2026-11-28T07:55:05Z", "4h04m"),
        ("NotebooksPending", "warning", "", "", "2026-11-28T10:35:05Z", "1h24m"),
        ("DiskAlmostFull", "warning", "m1", "10.0.0.2:9100", "2026-11-28T11:02:35Z", "57m"),
        ("LoadHigh", "info", "w3", "10.0.0.13:9100", "2026-11-28T11:40:05Z", "19m"),
    ]
    assert firing[0]["summary"] == "w2 does not answer (node-exporter)"
    assert firing[0]["fingerprint"] == "3f1a9c2e7b4d5a60"
    assert firing[1]["labels"]["xid"] == "79"


def test_silenced_and_inhibited_alerts_are_left_out():
    names = {a["alertname"] for a in alertmanager.alertmanager_firing(ALERTS, HOSTS, ADDRESSES, now=NOW)}
    assert "SparkWorkerDown" not in names  # inhibited by w2's HostDown
    assert "GpuEccErrors" not in names  # silenced
    # The same alert unsuppressed fires.
    silenced = next(a for a in ALERTS if a["labels"]["alertname"] == "GpuEccErrors")
    lifted = dict(silenced, status={"state": "active", "silencedBy": [], "inhibitedBy": []})
    assert [a["alertname"] for a in alertmanager.alertmanager_firing([lifted], HOSTS, now=NOW)] == ["GpuEccErrors"]


def test_alerts_land_in_their_hosts_problems():
    problems = report()["problems"]
    assert problems == {
        "w2": ["alert HostDown (critical): w2 does not answer (node-exporter)"],
        "gpu1": ["alert GpuXidErrors (critical): GPU 0 on gpu1 reported Xid 79"],
        "m1": ["alert DiskAlmostFull (warning): / on m1 is 91% full"],
        "w3": ["alert LoadHigh (info): Load on 10.0.0.13:9100 is above its cores for 15m"],
    }


def test_an_instance_address_several_hosts_share_names_none_of_them():
    alert = dict(ALERTS[6], labels={"alertname": "LoadHigh", "instance": "127.0.0.1:9100", "severity": "info"})
    (firing,) = alertmanager.alertmanager_firing([alert], HOSTS, ADDRESSES, now=NOW)
    assert firing["host"] == "" and firing["instance"] == "127.0.0.1:9100"


def test_an_instance_that_is_an_inventory_name_names_that_host():
    alert = dict(ALERTS[0], labels={"alertname": "HubDown", "instance": "hub1:443", "severity": "critical"})
    assert [a["host"] for a in alertmanager.alertmanager_firing([alert], HOSTS, now=NOW)] == ["hub1"]


def test_the_lines_list_each_firing_alert():
    lines = report()["lines"]
    assert lines[0] == "alerts: 6 firing (Alertmanager on m1):"
    assert lines[1].split() == ["alert", "severity", "host", "since", "summary"]
    rows = [line.split(None, 3) for line in lines[2:]]
    assert [row[:3] for row in rows] == [["HostDown", "critical", "w2"], ["GpuXidErrors", "critical", "gpu1"],
                                         ["ExporterDown", "warning", "w9"], ["NotebooksPending", "warning", "-"],
                                         ["DiskAlmostFull", "warning", "m1"], ["LoadHigh", "info", "w3"]]
    assert rows[0][3] == "2026-11-28T09:14:05Z (2h45m)  w2 does not answer (node-exporter)"
    # Columns line up: each row's summary starts where the header's does.
    assert len({line.index(summary) for line, summary in
                zip(lines[1:], ["summary"] + [a["summary"] for a in report()["alerts"]])}) == 1


def test_nothing_firing():
    quiet = [a for a in ALERTS if a["status"]["state"] != "active"]
    result = report(answered(quiet))
    assert result["lines"] == ["alerts: no alerts firing (Alertmanager on m1)"]
    assert result["answered"] is True and result["alerts"] == [] and result["problems"] == {}
    assert report(answered([]))["lines"] == ["alerts: no alerts firing (Alertmanager on m1)"]


@pytest.mark.parametrize("result, line", [
    ({"status": -1, "changed": False, "url": "http://127.0.0.1:9093/alertmanager/api/v2/alerts",
      "msg": "Status code was -1 and not [200]: Request failed: <urlopen error [Errno 111] Connection refused>"},
     "alerts: Alertmanager on m1 did not answer: <urlopen error [Errno 111] Connection refused>"),
    ({"status": 404, "changed": False, "msg": "Status code was 404 and not [200]: HTTP Error 404: Not Found"},
     "alerts: Alertmanager on m1 did not answer: HTTP Error 404: Not Found"),
    ({"unreachable": True, "msg": "Failed to connect to the host via ssh: ssh: connect to host 10.0.0.2 port 22"},
     "alerts: Alertmanager on m1 did not answer: m1 is unreachable over SSH"),
    ({}, "alerts: Alertmanager on m1 did not answer: not asked (the run stopped on m1 before)"),
    ({"status": 200, "msg": "OK", "content": "<html>"},
     "alerts: Alertmanager on m1 did not answer: its answer is not a list of alerts"
     " (is monitoring_alertmanager_path its route prefix?)"),
], ids=["connection refused", "wrong path", "host unreachable", "not asked", "not JSON"])
def test_an_alertmanager_that_does_not_answer_is_said_in_one_line(result, line):
    assert report(result) == {"answered": False, "alerts": [], "problems": {}, "lines": [line]}


def test_no_monitoring_host():
    assert report(server="")["lines"] == ["alerts: no monitoring host (no host in the monitoring group or spark_masters)"]


@pytest.mark.parametrize("alerts", ["[]", {"data": []}, [{"fingerprint": "x"}], [{"labels": {}, "startsAt": "yesterday"}]],
                         ids=["text", "v1 answer", "no labels", "bad time"])
def test_what_is_not_an_alertmanager_answer_is_refused(alerts):
    with pytest.raises(AnsibleFilterError):
        alertmanager.alertmanager_firing(alerts, HOSTS, now=NOW)
