"""GPU-hours per hub user and group, from recorded Docker API (GET /tasks, GET /services on a manager) and
JupyterHub API (GET /hub/api/users) answers: alice's running notebook (1 share), bob's stopped one (2 shares),
an ETL service no hub user holds, a notebook still waiting for a GPU and a CPU-only one."""

import json

import pytest
from ansible.errors import AnsibleFilterError

from conftest import ROOT, load_plugin

hours = load_plugin("filter", "gpu_hours")

FIXTURES = ROOT / "tests" / "unit" / "plugins" / "filter" / "fixtures" / "gpu_hours"
TASKS = json.loads((FIXTURES / "tasks.json").read_text())
SERVICES = json.loads((FIXTURES / "services.json").read_text())
HUB_USERS = json.loads((FIXTURES / "hub_users.json").read_text())
NOW = "2026-11-28T12:00:00Z"


def ledger(previous=(), now=NOW, tasks=TASKS):
    return hours.gpu_task_usage(list(previous), tasks, SERVICES, now=now)


def test_the_ledger_holds_the_tasks_that_were_given_gpus():
    assert ledger() == [
        {"task": "t1alice0000000000000000001", "service": "jupyter-alice", "user": "alice", "node": "nodegpu1000000000000000001",
         "shares": 1, "start": "2026-11-28T08:00:00.000000Z", "end": None, "seen": "2026-11-28T12:00:00.000000Z"},
        {"task": "t2bob000000000000000000001", "service": "jupyter-bob", "user": "bob", "node": "nodegpu1000000000000000001",
         "shares": 2, "start": "2026-11-28T09:00:00.000000Z", "end": "2026-11-28T10:30:00.000000Z",
         "seen": "2026-11-28T12:00:00.000000Z"},
        {"task": "t3etl000000000000000000001", "service": "etl", "user": "", "node": "nodegpu2000000000000000001",
         "shares": 1, "start": "2026-11-28T10:30:00.000000Z", "end": "2026-11-28T11:30:00.000000Z",
         "seen": "2026-11-28T12:00:00.000000Z"},
    ]


def test_no_secret_of_the_tasks_environment_reaches_the_ledger():
    text = json.dumps(ledger())
    assert "TOKEN" not in text and "5c1e8b2f7a9d4e0b8c6a3f1d2e4b6a8c" not in text


def test_gpu_hours_per_user_group_and_service():
    report = hours.gpu_hours(ledger(), HUB_USERS, now=NOW)
    assert report == {
        "since": None,
        "until": "2026-11-28T12:00:00.000000Z",
        "shares_per_gpu": 1,
        "total_gpu_hours": 8.0,
        "users": [
            {"user": "alice", "gpu_hours": 4.0, "tasks": 1, "groups": ["ml", "research"], "hub_user": True},
            {"user": "bob", "gpu_hours": 3.0, "tasks": 1, "groups": ["ml"], "hub_user": True},
        ],
        "groups": [
            {"group": "ml", "gpu_hours": 7.0, "users": ["alice", "bob"]},
            {"group": "research", "gpu_hours": 4.0, "users": ["alice"]},
        ],
        "services": [{"service": "etl", "gpu_hours": 1.0, "tasks": 1}],
    }


def test_a_window_counts_only_the_time_inside_it():
    report = hours.gpu_hours(ledger(), HUB_USERS, since="2026-11-28T11:00:00Z", until="2026-11-28T11:45:00+00:00", now=NOW)
    assert [(u["user"], u["gpu_hours"]) for u in report["users"]] == [("alice", 0.75)]
    assert [(s["service"], s["gpu_hours"]) for s in report["services"]] == [("etl", 0.5)]
    assert report["total_gpu_hours"] == 1.25
    assert report["since"] == "2026-11-28T11:00:00.000000Z"


def test_shares_per_gpu_turns_shares_into_gpus():
    report = hours.gpu_hours(ledger(), HUB_USERS, now=NOW, shares_per_gpu=2)
    assert [(u["user"], u["gpu_hours"]) for u in report["users"]] == [("alice", 2.0), ("bob", 1.5)]


def _running_at_0930():
    """The Swarm's tasks as listed at 09:30: alice's and bob's servers running, the ETL not started yet."""
    tasks = [t for t in json.loads(json.dumps(TASKS)) if t["ID"] != "t3etl000000000000000000001"]
    next(t for t in tasks if t["ID"] == "t2bob000000000000000000001")["Status"] = {
        "Timestamp": "2026-11-28T09:00:02Z", "State": "running"}
    return tasks


def test_the_ledger_keeps_what_the_swarm_forgot():
    first = ledger(now="2026-11-28T09:30:00Z", tasks=_running_at_0930())
    # bob's server was still running at 09:30; by 12:00 the hub removed its service and the Swarm its tasks,
    # and alice's server stopped between the two runs, its service gone too.
    gone = {"t1alice0000000000000000001", "t2bob000000000000000000001"}
    second = ledger(first, tasks=[t for t in TASKS if t["ID"] not in gone])
    entries = {e["task"]: e for e in second}
    assert set(entries) == gone | {"t3etl000000000000000000001"}
    # Both were running when last seen: they count until then, no longer.
    assert entries["t1alice0000000000000000001"]["end"] == "2026-11-28T09:30:00.000000Z"
    assert entries["t2bob000000000000000000001"]["end"] == "2026-11-28T09:30:00.000000Z"
    report = hours.gpu_hours(second, HUB_USERS, now=NOW)
    assert [(u["user"], u["gpu_hours"]) for u in report["users"]] == [("alice", 1.5), ("bob", 1.0)]


def test_a_task_seen_running_then_ended_gets_its_real_end():
    bob = "t2bob000000000000000000001"
    first = ledger(now="2026-11-28T09:30:00Z", tasks=_running_at_0930())
    assert next(e for e in first if e["task"] == bob)["end"] is None
    second = ledger(first)
    assert next(e for e in second if e["task"] == bob)["end"] == "2026-11-28T10:30:00.000000Z"


def test_a_user_the_hub_no_longer_knows_is_still_counted():
    report = hours.gpu_hours(ledger(), [u for u in HUB_USERS if u["name"] != "bob"], now=NOW)
    assert {"user": "bob", "gpu_hours": 3.0, "tasks": 1, "groups": [], "hub_user": False} in report["users"]
    assert [(g["group"], g["gpu_hours"]) for g in report["groups"]] == [("ml", 4.0), ("research", 4.0)]


def test_another_kind_of_resource_is_not_a_gpu():
    assert hours.gpu_task_usage([], TASKS, SERVICES, kind="AMD-GPU", now=NOW) == []


@pytest.mark.parametrize("call, message", [
    (lambda: hours.gpu_task_usage([], {"ID": "x"}, now=NOW), "tasks must be a list"),
    (lambda: hours.gpu_task_usage([{"user": "x"}], [], now=NOW), "ledger entry must be a dict with a task id"),
    (lambda: hours.gpu_hours([], HUB_USERS, since="yesterday", now=NOW), "since must be an ISO 8601 time"),
    (lambda: hours.gpu_hours([], HUB_USERS, since="2026-11-29T00:00:00Z", now=NOW), "is after until"),
    (lambda: hours.gpu_hours([], HUB_USERS, now=NOW, shares_per_gpu=0), "shares_per_gpu must be a positive integer"),
    (lambda: hours.gpu_hours([], [{"groups": []}], now=NOW), "a hub user must be a dict with a name"),
])
def test_bad_inputs_say_what_is_wrong(call, message):
    with pytest.raises(AnsibleFilterError, match=message):
        call()


def test_times_with_nanoseconds_and_offsets():
    assert hours.format_time(hours.parse_time("2026-11-28T08:00:04.701953377Z")) == "2026-11-28T08:00:04.701953Z"
    assert hours.format_time(hours.parse_time("2026-11-28T10:00:00+02:00")) == "2026-11-28T08:00:00.000000Z"
    assert hours.format_time(hours.parse_time("2026-11-28 10:00:00+0100")) == "2026-11-28T09:00:00.000000Z"


def test_the_report_as_a_table():
    report = hours.gpu_hours(ledger(), [u for u in HUB_USERS if u["name"] != "bob"], now=NOW)
    assert hours.gpu_hours_table(report) == [
        "GPU-hours from the start of the ledger to 2026-11-28T12:00:00.000000Z: 8.00 in all (1 share(s) per GPU).",
        "user                      GPU-hours  tasks  groups",
        "alice                          4.00      1  ml, research",
        "bob                            3.00      1  (not a hub user now)",
        "group                     GPU-hours  users",
        "ml                             4.00  alice",
        "research                       4.00  alice",
        "service (no hub user)     GPU-hours  tasks",
        "etl                            1.00      1",
    ]
    with pytest.raises(AnsibleFilterError, match="expects the report"):
        hours.gpu_hours_table([])


def test_the_engines_own_field_recorded_in_the_lab():
    """Docker 20.10's GET /tasks (recorded in the lab, the environment cut to the hub user's name) names
    the shares a task was given GenericResources: alice's notebook holds one, the network anchor none."""
    recorded = json.loads((FIXTURES / "tasks_recorded_lab.json").read_text())
    (entry,) = hours.gpu_task_usage([], recorded, [], now="2026-11-29T05:08:54Z")
    assert (entry["user"], entry["shares"], entry["start"], entry["end"]) == ("alice", 1, "2026-11-29T04:08:54.670153Z", None)
    assert hours.gpu_hours([entry], [], now="2026-11-29T05:08:54Z")["users"][0]["gpu_hours"] == pytest.approx(1.0, abs=1e-4)
