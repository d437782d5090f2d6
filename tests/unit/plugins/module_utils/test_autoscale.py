"""The autoscaler's decisions (plugins/module_utils/autoscale.py), from the shapes the Spark
master, YARN and the Swarm answer with."""

import json

import pytest

from conftest import load_plugin

autoscale = load_plugin("module_utils", "autoscale")

POOLS = {
    "worker": {"min": 1, "max": 4, "cooldown": 600, "cores_per_worker": 16, "gpus_per_worker": 0, "gpu_shares_per_worker": 0},
    "gpu_worker": {"min": 0, "max": 2, "cooldown": 600, "cores_per_worker": 8, "gpus_per_worker": 1, "gpu_shares_per_worker": 3},
}
NOW = 1_800_000_000


def pool_of(host):
    if "-gpu-worker-" in host:
        return "gpu_worker"
    return "worker" if "-worker-" in host else None


def worker(host, cores=16, used=0, state="ALIVE", gpus_used=0):
    """One entry of the master's /json/ `workers`."""
    return {"id": f"worker-{host}", "host": host, "port": 35000, "cores": cores, "coresused": used,
            "coresfree": cores - used, "state": state,
            "resources": {"gpu": {"name": "gpu", "addresses": ["0"]}} if "gpu" in host else {},
            "resourcesused": {"gpu": {"name": "gpu", "addresses": ["0"] * gpus_used}} if "gpu" in host else {}}


def app(app_id, state="RUNNING", cores=0, gpus=0):
    return {"id": app_id, "name": f"job {app_id}", "cores": cores, "state": state, "memoryperexecutor": 1024,
            "resourcesperexecutor": [{"name": "gpu", "amount": gpus}] if gpus else []}


def master(workers, apps=()):
    return {"url": "spark://m:7077", "status": "ALIVE", "workers": workers, "activeapps": list(apps), "completedapps": []}


def pending_task(service, shares=0, cpus=0.0, err="no suitable node (insufficient resources on 3 nodes)"):
    reservations = {"NanoCPUs": int(cpus * 1e9)}
    if shares:
        reservations["GenericResources"] = [{"DiscreteResourceSpec": {"Kind": "NVIDIA-GPU", "Value": shares}}]
    return {"ID": f"t-{service}", "ServiceID": f"id-{service}", "DesiredState": "running",
            "Status": {"State": "pending", "Message": "pending task scheduling", "Err": err},
            "Spec": {"Resources": {"Reservations": reservations}}}


def services(tasks):
    """The Engine API's services of the tasks (a task names its service by ID only)."""
    return [{"ID": t["ServiceID"], "Spec": {"Name": t["ServiceID"][3:]}} for t in tasks if str(t.get("ServiceID")).startswith("id-")]


def run(m, tasks=(), previous=None, now=NOW, pools=None, dry_run=False, nodes=()):
    workers = autoscale.spark_workers(m, pool_of)
    demand = autoscale.merge_demand(autoscale.spark_demand(m, 4, pool_of),
                                    autoscale.swarm_demand(list(tasks), "NVIDIA-GPU", services(tasks)))
    busy = autoscale.swarm_busy_nodes(list(tasks), list(nodes))
    decisions, record = autoscale.decide(pools or POOLS, workers, demand, previous, now, add_timeout=1800, busy_nodes=busy,
                                         dry_run=dry_run)
    # The record goes to a JSON-lines file: it must survive the round trip unchanged.
    assert json.loads(json.dumps(record)) == record
    return {d["pool"]: d for d in decisions}, record


def test_waiting_cores_add_enough_workers_for_them():
    waiting = [dict(app(f"app-{n}", state="WAITING"), coresperexecutor=12) for n in range(3)]  # 36 cores
    by_pool, _record = run(master([worker("c-worker-1", used=16)], waiting))
    assert by_pool["worker"]["action"] == "add"
    assert by_pool["worker"]["count"] == 3  # ceil(36 / 16)
    assert "app-0" in by_pool["worker"]["reason"]
    assert by_pool["gpu_worker"]["action"] == "none"


def test_an_addition_is_capped_by_the_maximum():
    waiting = [dict(app("big", state="WAITING"), coresperexecutor=200)]
    by_pool, record = run(master([worker("c-worker-1", used=16), worker("c-worker-2", used=16)], waiting))
    assert (by_pool["worker"]["action"], by_pool["worker"]["count"]) == ("add", 2)  # max 4, 2 alive
    assert "the maximum is 4" in by_pool["worker"]["reason"]
    full = [worker(f"c-worker-{n}", used=16) for n in range(1, 5)]
    by_pool, _record = run(master(full, waiting))
    assert by_pool["worker"]["action"] == "none"
    assert "maximum 4" in by_pool["worker"]["reason"]
    assert record["in_flight"] == [{"pool": "worker", "count": 2, "time": NOW, "baseline": ["c-worker-1", "c-worker-2"]}]


def test_a_running_application_asks_for_nothing():
    by_pool, _record = run(master([worker("c-worker-1", used=16)], [app("a", cores=16)]))
    assert by_pool["worker"]["action"] == "none"


def test_a_waiting_gpu_application_adds_a_gpu_worker():
    by_pool, _record = run(master([worker("c-worker-1")], [app("gpu-job", state="WAITING", gpus=1)]))
    assert (by_pool["gpu_worker"]["action"], by_pool["gpu_worker"]["count"]) == ("add", 1)
    assert by_pool["worker"]["action"] != "add"


def test_a_notebook_pending_for_gpu_shares_adds_a_gpu_worker():
    tasks = [pending_task("jupyter-alice", shares=1), pending_task("jupyter-bob", shares=1)]
    by_pool, _record = run(master([worker("c-worker-1")]), tasks)
    # Two shares fit on one GPU worker of three shares.
    assert (by_pool["gpu_worker"]["action"], by_pool["gpu_worker"]["count"]) == ("add", 1)
    assert "jupyter-alice" in by_pool["gpu_worker"]["reason"]
    assert by_pool["worker"]["action"] != "add"


def test_a_pending_task_of_an_unlisted_service_is_named_by_its_id():
    demand = autoscale.swarm_demand([pending_task("jupyter-alice", shares=1)], "NVIDIA-GPU")
    assert demand["gpu_worker"]["why"] == ["Swarm task of id-jupyter-alice pending for 1 GPU shares"]


def test_a_task_pending_for_another_reason_asks_for_nothing():
    tasks = [pending_task("jupyter-carol", shares=1, err="no such image: notebook:1"),
             dict(pending_task("jupyter-dave", shares=1), DesiredState="shutdown")]
    by_pool, _record = run(master([worker("c-worker-1")]), tasks)
    assert by_pool["gpu_worker"]["action"] == "none"


def test_a_repeated_run_after_a_crash_adds_nothing_twice():
    # Two applications whose one executor each takes a whole worker's cores; the only worker is full.
    waiting = [dict(app(a, state="WAITING"), coresperexecutor=16) for a in ("a", "b")]
    m = master([worker("c-worker-1", used=16)], waiting)
    first, record = run(m)
    assert (first["worker"]["action"], first["worker"]["count"]) == ("add", 2)
    # The runner died after logging; the master still shows the same: no second addition.
    again, record2 = run(m, previous=json.loads(json.dumps(record)), now=NOW + 60)
    assert again["worker"]["action"] == "none"
    assert again["worker"]["in_flight"] == 2
    # One machine arrived (both applications fit there now), one is still coming: nothing added.
    m2 = master([worker("c-worker-1", used=16), worker("c-worker-2")], waiting)
    later, record3 = run(m2, previous=record2, now=NOW + 120)
    assert later["worker"]["action"] == "none" and later["worker"]["in_flight"] == 1
    # Past the timeout the missing machine is asked for again: a runs on the new worker, b still waits.
    m3 = master([worker("c-worker-1", used=16), worker("c-worker-2", used=16)], [dict(app("a"), cores=16), waiting[1]])
    late, _record = run(m3, previous=record3, now=NOW + 1800)
    assert (late["worker"]["action"], late["worker"]["count"]) == ("add", 1)


def test_free_cores_without_an_executors_memory_are_no_room():
    """The lab's workers: a core free on each, but not the memory of one executor; the waiting
    application asks for a machine."""
    workers = [dict(worker(f"c-worker-{n}", cores=2, used=1), memoryfree=256) for n in (1, 2)]
    waiting = [dict(app("w", state="WAITING"), coresperexecutor=1, memoryperexecutor=1792)]
    by_pool, _record = run(master(workers, waiting))
    assert (by_pool["worker"]["action"], by_pool["worker"]["count"]) == ("add", 1)
    assert "is WAITING for room" in by_pool["worker"]["reason"]


def test_a_dry_run_puts_nothing_in_flight():
    m = master([worker("c-worker-1", used=16)], [dict(app("a", state="WAITING"), coresperexecutor=4)])
    first, record = run(m, dry_run=True)
    assert first["worker"]["action"] == "add" and record["in_flight"] == [] and record["dry_run"] is True
    again, _record = run(m, previous=record, now=NOW + 60)
    assert again["worker"]["action"] == "add"


def test_idle_workers_past_the_cooldown_are_removed_never_below_the_minimum():
    workers = [worker(f"c-worker-{n}") for n in (1, 2, 3)]
    _seen, record = run(master(workers))  # first sight: the cooldown starts now
    by_pool, record = run(master(workers), previous=record, now=NOW + 599)
    assert by_pool["worker"]["action"] == "none"
    by_pool, _record = run(master(workers), previous=record, now=NOW + 600)
    assert by_pool["worker"]["action"] == "remove"
    assert by_pool["worker"]["hosts"] == ["c-worker-3", "c-worker-2"]  # min 1 stays; the highest go
    assert "600" in by_pool["worker"]["reason"]


def test_a_worker_holding_executors_is_kept():
    workers = [worker("c-worker-1"), worker("c-worker-2", used=4), worker("c-worker-10")]
    _seen, record = run(master(workers, [app("a", cores=4)]))
    by_pool, _record = run(master(workers, [app("a", cores=4)]), previous=record, now=NOW + 3600)
    # c-worker-2 runs an executor; the idle ones go, the highest number first (10 before 1).
    assert by_pool["worker"]["hosts"] == ["c-worker-10", "c-worker-1"]


def test_a_worker_busy_lately_waits_for_its_cooldown():
    workers = [worker("c-worker-1"), worker("c-worker-2")]
    _seen, record = run(master([worker("c-worker-1"), worker("c-worker-2", used=2)]))
    by_pool, _record = run(master(workers), previous=record, now=NOW + 300)
    assert by_pool["worker"]["action"] == "none"
    by_pool, _record = run(master(workers), previous=record, now=NOW + 600)
    assert by_pool["worker"]["hosts"] == ["c-worker-2"]


def test_a_swarm_task_keeps_a_gpu_worker():
    workers = [worker("c-gpu-worker-1", cores=8), worker("c-gpu-worker-2", cores=8)]
    nodes = [{"ID": "n1", "Description": {"Hostname": "c-gpu-worker-1"}}]
    running = [{"ID": "t1", "NodeID": "n1", "Status": {"State": "running"}}]
    _seen, record = run(master(workers), running, nodes=nodes)
    by_pool, _record = run(master(workers), running, previous=record, now=NOW + 3600, nodes=nodes)
    assert by_pool["gpu_worker"]["hosts"] == ["c-gpu-worker-2"]


def test_the_hubs_network_anchor_keeps_no_gpu_worker():
    """The hub keeps one task asleep on every GPU node (its network anchor): that is no work."""
    workers = [worker("c-gpu-worker-1", cores=8), worker("c-gpu-worker-2", cores=8)]
    nodes = [{"ID": "n1", "Description": {"Hostname": "c-gpu-worker-1"}}, {"ID": "n2", "Description": {"Hostname": "c-gpu-worker-2"}}]
    anchors = [{"ID": "a" + n["ID"], "NodeID": n["ID"], "Status": {"State": "running"},
                "Spec": {"ContainerSpec": {"Image": "hub:5000/sparkfleet/notebook", "Labels": {autoscale.NOT_WORK_LABEL: "true"}}}}
               for n in nodes]
    _seen, record = run(master(workers), anchors, nodes=nodes)
    by_pool, _record = run(master(workers), anchors, previous=record, now=NOW + 3600, nodes=nodes)
    assert by_pool["gpu_worker"]["hosts"] == ["c-gpu-worker-2", "c-gpu-worker-1"]


def test_a_gpu_in_use_keeps_a_gpu_worker():
    workers = [worker("c-gpu-worker-1", cores=8, gpus_used=1)]
    _seen, record = run(master(workers))
    by_pool, _record = run(master(workers), previous=record, now=NOW + 3600)
    assert by_pool["gpu_worker"]["action"] == "none"


def test_the_minimum_is_restored_when_workers_are_gone():
    by_pool, _record = run(master([worker("c-worker-1", state="DEAD")]))
    assert (by_pool["worker"]["action"], by_pool["worker"]["count"]) == ("add", 1)
    assert "below the minimum 1" in by_pool["worker"]["reason"]


def test_no_removal_while_work_waits_for_room():
    # Free cores, but not the memory one executor asks for: the application waits for room.
    workers = [dict(worker(f"c-worker-{n}"), memoryfree=512) for n in (1, 2, 3, 4)]
    _seen, record = run(master(workers))
    waiting = [dict(app("a", state="WAITING"), memoryperexecutor=1024)]
    by_pool, _record = run(master(workers, waiting), previous=record, now=NOW + 3600)
    # It wants a machine the pool's maximum does not allow, and nothing is removed.
    assert by_pool["worker"]["action"] == "none"
    assert by_pool["worker"]["reason"] == "1 more wanted, but the pool is at its maximum 4"


def test_an_application_that_fits_but_waits_asks_for_nothing():
    """Dynamic allocation at zero executors (an idle Spark Connect server) leaves an application
    WAITING although a worker has room: it neither adds a machine nor keeps idle ones."""
    workers = [worker("c-worker-1"), worker("c-worker-2")]
    idle_connect = [app("app-connect", state="WAITING")]
    _seen, record = run(master(workers, idle_connect))
    by_pool, _record = run(master(workers, idle_connect), previous=record, now=NOW + 3600)
    assert (by_pool["worker"]["action"], by_pool["worker"]["hosts"]) == ("remove", ["c-worker-2"])


def test_an_ignored_application_never_asks():
    full = master([worker("c-worker-1", used=16)], [dict(app("c", state="WAITING"), name="Spark Connect server")])
    demand = autoscale.spark_demand(full, 4, pool_of, ignored=["Spark Connect server"])
    assert demand["worker"] == {"cores": 0, "gpus": 0, "shares": 0, "why": []}
    assert autoscale.spark_demand(full, 4, pool_of)["worker"]["cores"] == 4


def test_yarn_pending_vcores_are_the_worker_pools_demand():
    demand = autoscale.yarn_demand({"clusterMetrics": {"pendingVirtualCores": 40, "appsPending": 2}})
    decisions, _record = autoscale.decide(POOLS, [{"host": "c-worker-1", "pool": "worker", "busy": ["x"]}],
                                          autoscale.merge_demand(demand), None, NOW)
    by_pool = {d["pool"]: d for d in decisions}
    assert (by_pool["worker"]["action"], by_pool["worker"]["count"]) == ("add", 3)
    assert "40 vcores" in by_pool["worker"]["reason"]


@pytest.mark.parametrize("lines, expected", [
    ([], None),
    (['{"time": 1, "last_busy": {}}', '{"time": 2, "last_busy": {"a": 2}}', '{"time": 3, "last_'], 2),
    (['{"time": 1, "last_busy": {}}', '{"result": "ok"}'], 1),
])
def test_the_last_record_skips_a_torn_line_and_result_lines(lines, expected):
    record = autoscale.last_record(lines)
    assert (record or {}).get("time") == expected
