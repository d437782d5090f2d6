# Copyright: sparkfleet contributors
# Apache License 2.0
"""The autoscaler's decisions, as pure functions of what the cluster shows.

Two pools, ``worker`` and ``gpu_worker`` (the machines' ``sparkfleet-role``). Each run reads:
the Spark master's JSON (``/json/``) or YARN's cluster metrics, the Swarm's tasks, the pools'
members, and the previous run's record from the decisions log (the last time each worker was
busy, the additions not yet seen as workers). ``decide`` returns one decision per pool and the
record to append; the runner carries the decisions out. Nothing here reads a clock or a file:
the same inputs give the same decisions, which is what makes a repeated run after a crash safe.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import math
import re

POOLS = ("worker", "gpu_worker")
# The error dockerd's scheduler gives a task that no node has room for.
_NO_ROOM = re.compile(r"no suitable node.*insufficient resources", re.I)
# A worker's GPUs as the Spark master names the resource (spark.worker.resource.gpu.*).
_GPU = "gpu"


def _gpu_amount(resources):
    """GPUs in a Spark resources list ([{name, amount}]) or map ({gpu: {addresses}})."""
    if isinstance(resources, dict):
        gpu = resources.get(_GPU) or {}
        return len(gpu.get("addresses", [])) if isinstance(gpu, dict) else int(gpu or 0)
    return sum(int(r.get("amount", 0)) for r in resources or [] if r.get("name") == _GPU)


def spark_workers(master, pool_of):
    """The ALIVE workers the master lists, as {host, pool, busy, free_cores, free_gpus}; pool_of maps a host to its pool
    (None for a host of neither pool, which is left out)."""
    out = []
    for worker in (master or {}).get("workers", []):
        pool = pool_of(worker.get("host"))
        if worker.get("state") != "ALIVE" or pool is None:
            continue
        gpus_used = _gpu_amount(worker.get("resourcesused"))
        # Executors hold their cores until they exit, including an idle executor that keeps
        # shuffle files another stage will read: a worker with cores in use is not idle.
        busy = []
        if int(worker.get("coresused", 0)) > 0:
            busy.append(f"{worker['coresused']} cores in use")
        if gpus_used > 0:
            busy.append(f"{gpus_used} GPUs in use")
        free_gpus = _gpu_amount(worker.get("resources")) - gpus_used
        out.append({"host": worker["host"], "pool": pool, "busy": busy,
                    "free_cores": int(worker.get("coresfree", 0)), "free_gpus": max(free_gpus, 0)})
    return out


def _fits(worker, cores, memory_mb, gpus):
    """Whether one executor of that size fits in what the worker has free."""
    free_gpus = _gpu_amount(worker.get("resources")) - _gpu_amount(worker.get("resourcesused"))
    return (int(worker.get("coresfree", 0)) >= cores and int(worker.get("memoryfree", memory_mb)) >= memory_mb
            and free_gpus >= gpus)


def spark_demand(master, executor_cores, pool_of=None, ignored=()):
    """What the standalone master's waiting applications ask for, per pool: {pool: {cores, gpus}}.

    The master's JSON gives an application's granted cores, not the cores it wants: an
    application still WAITING has no executor at all. It waits for room only when no ALIVE worker
    of its pool has one executor's free cores (``executor_cores``), memory and GPUs; otherwise it
    asks for none (dynamic allocation at zero executors, e.g. an idle Spark Connect server) and is
    not counted. Applications named in ``ignored`` never count. GPUs per executor send an
    application to the GPU pool."""
    demand = {pool: {"cores": 0, "gpus": 0, "shares": 0, "why": []} for pool in POOLS}
    alive = [w for w in (master or {}).get("workers", []) if w.get("state") == "ALIVE"]
    for app in (master or {}).get("activeapps", []):
        if app.get("state") != "WAITING" or app.get("name") in ignored:
            continue
        gpus = _gpu_amount(app.get("resourcesperexecutor"))
        pool = "gpu_worker" if gpus else "worker"
        cores = int(app.get("coresperexecutor") or executor_cores)
        memory = int(app.get("memoryperexecutor") or 0)
        if any(_fits(w, cores, memory, gpus) for w in alive if pool_of is None or pool_of(w.get("host")) == pool):
            continue
        demand[pool]["cores"] += cores
        demand[pool]["gpus"] += gpus
        demand[pool]["why"].append(f"Spark application {app.get('id')} ({app.get('name')}) is WAITING for room")
    return demand


def yarn_demand(metrics):
    """YARN's pending vcores (ResourceManager /ws/v1/cluster/metrics) as the worker pool's demand."""
    cluster = (metrics or {}).get("clusterMetrics", {})
    demand = {pool: {"cores": 0, "gpus": 0, "shares": 0, "why": []} for pool in POOLS}
    pending = int(cluster.get("pendingVirtualCores", 0))
    if pending > 0:
        demand["worker"]["cores"] = pending
        demand["worker"]["why"].append(f"YARN has {pending} vcores pending ({cluster.get('appsPending', 0)} apps pending)")
    return demand


def _task_shares(task, gpu_kind):
    spec = ((task.get("Spec") or {}).get("Resources") or {}).get("Reservations") or {}
    total = 0
    for resource in spec.get("GenericResources") or []:
        discrete = resource.get("DiscreteResourceSpec") or {}
        if discrete.get("Kind") == gpu_kind:
            total += int(discrete.get("Value", 0))
    return total, (spec.get("NanoCPUs") or 0) / 1e9


def swarm_demand(tasks, gpu_kind, services=()):
    """Swarm tasks (the Engine API's task objects) pending because no node has room: GPU shares for
    the GPU pool, CPUs for the worker pool. {pool: {cores, shares, why}}. services (the Engine
    API's service objects) name each task's service in the reasons (a task has only its ID)."""
    names = {s.get("ID"): (s.get("Spec") or {}).get("Name") or s.get("Name") for s in services or []}
    demand = {pool: {"cores": 0, "gpus": 0, "shares": 0, "why": []} for pool in POOLS}
    for task in tasks or []:
        status = task.get("Status") or {}
        if status.get("State") != "pending" or task.get("DesiredState") not in (None, "running"):
            continue
        if not _NO_ROOM.search(status.get("Err") or ""):
            continue
        shares, cpus = _task_shares(task, gpu_kind)
        name = names.get(task.get("ServiceID")) or task.get("ServiceID") or task.get("ID")
        if shares:
            demand["gpu_worker"]["shares"] += shares
            demand["gpu_worker"]["why"].append(f"Swarm task of {name} pending for {shares} GPU shares")
        else:
            demand["worker"]["cores"] += max(1, math.ceil(cpus))
            demand["worker"]["why"].append(f"Swarm task of {name} pending for room")
    return demand


# A container label of tasks that are no work: the hub's network anchor, one asleep on every GPU
# node (roles/jupyterhub/tasks/swarm.yml), would otherwise keep every GPU worker busy for ever.
NOT_WORK_LABEL = "sparkfleet.autoscaler.idle"


def swarm_busy_nodes(tasks, nodes):
    """Hostnames of the Swarm nodes running a task (other than those labelled as no work): {hostname: count}."""
    names = {n.get("ID"): (n.get("Description") or {}).get("Hostname") for n in nodes or []}
    busy = {}
    for task in tasks or []:
        labels = (((task.get("Spec") or {}).get("ContainerSpec") or {}).get("Labels") or {})
        if labels.get(NOT_WORK_LABEL) == "true":
            continue
        if (task.get("Status") or {}).get("State") == "running" and task.get("NodeID") in names:
            host = names[task["NodeID"]]
            busy[host] = busy.get(host, 0) + 1
    return busy


def merge_demand(*demands):
    total = {pool: {"cores": 0, "gpus": 0, "shares": 0, "why": []} for pool in POOLS}
    for demand in demands:
        for pool, d in demand.items():
            for key in ("cores", "gpus", "shares"):
                total[pool][key] += d[key]
            total[pool]["why"] += d["why"]
    return total


def _number(host):
    match = re.search(r"(\d+)$", host)
    return (int(match.group(1)) if match else -1, host)


def _workers_needed(settings, d):
    """Workers to add for the demand d. Every source counts only what found no room: a Spark
    application WAITING where no ALIVE worker has one executor's cores, memory and GPUs free, YARN's
    pending vcores, Swarm tasks pending with "no suitable node". So the pool's free cores are not
    taken off again: free cores beside too little free memory are no room (the lab's workers, whose
    one executor takes their memory). A machine added since the last run is an addition in flight."""
    needs = [math.ceil(d["cores"] / max(1, settings["cores_per_worker"]))]
    if d["gpus"]:
        needs.append(math.ceil(d["gpus"] / max(1, settings.get("gpus_per_worker") or 1)))
    if d["shares"]:
        needs.append(math.ceil(d["shares"] / max(1, settings.get("gpu_shares_per_worker") or 1)))
    return max(needs)


def _pending_additions(previous, alive, now, timeout):
    """Additions decided by earlier (not dry) runs whose machines have not yet registered as workers:
    {pool: count}. An addition counts until as many new workers as it asked for are ALIVE, or until
    `timeout` seconds have passed (a run that died before its machines came: decide again)."""
    pending = {}
    for entry in (previous or {}).get("in_flight", []):
        if now - entry["time"] >= timeout:
            continue
        arrived = len(set(alive.get(entry["pool"], [])) - set(entry.get("baseline", [])))
        left = entry["count"] - arrived
        if left > 0:
            pending[entry["pool"]] = pending.get(entry["pool"], 0) + left
    return pending


def decide(pools, workers, demand, previous, now, add_timeout=1800, busy_nodes=None, dry_run=False):
    """One decision per pool, and the record for the decisions log.

    pools: {pool: {min, max, cooldown, cores_per_worker, gpus_per_worker, gpu_shares_per_worker}}.
    workers: spark_workers()'s list (ALIVE workers only). demand: merge_demand()'s.
    previous: the last record of the decisions log (or None). now: seconds since the epoch.
    busy_nodes: {host: running Swarm tasks}, which keep a worker busy too. dry_run: the record
    shows the decisions but puts no addition in flight (nothing is carried out).
    Returns (decisions, record); a decision is {action: add|remove|none, pool, count, hosts, reason}."""
    busy_nodes = busy_nodes or {}
    previous = previous or {}
    alive = {pool: sorted((w["host"] for w in workers if w["pool"] == pool), key=_number) for pool in pools}
    pending = _pending_additions(previous, alive, now, add_timeout)
    last_busy, why = {}, {}
    for w in workers:
        host = w["host"]
        why[host] = list(w["busy"]) + ([f"{busy_nodes[host]} Swarm tasks running"] if busy_nodes.get(host) else [])
        # A worker first seen now starts its cooldown now: a machine just added is not idle yet.
        last_busy[host] = now if why[host] else previous.get("last_busy", {}).get(host, now)

    decisions, in_flight = [], []
    for pool, settings in pools.items():
        d = demand.get(pool, {"cores": 0, "gpus": 0, "shares": 0, "why": []})
        have = len(alive[pool])
        coming = pending.get(pool, 0)
        need = _workers_needed(settings, d)
        waiting = bool(d["why"])
        lo, hi = int(settings["min"]), int(settings["max"])
        add = max(need - coming, lo - have - coming, 0)
        room = max(hi - have - coming, 0)
        base = {"pool": pool, "alive": have, "in_flight": coming, "count": 0, "hosts": []}
        if add > 0 and room > 0:
            count = min(add, room)
            if need > coming:
                reason = "; ".join(d["why"]) + f": {need} more worker(s) wanted"
            else:
                reason = f"{have} ALIVE worker(s), below the minimum {lo}"
            if count < add:
                reason += f", {count} added (the maximum is {hi})"
            if coming:
                reason += f", {coming} already coming"
            decisions.append(dict(base, action="add", count=count, reason=reason))
            if not dry_run:
                in_flight.append({"pool": pool, "count": count, "time": now, "baseline": alive[pool]})
            continue
        if add > 0:
            decisions.append(dict(base, action="none", reason=f"{add} more wanted, but the pool is at its maximum {hi}"))
            continue
        # Nothing leaves a pool while work waits for it or machines are on their way.
        if waiting or coming > 0:
            decisions.append(dict(base, action="none", reason=(
                f"{need} worker(s) wanted, {coming} already coming" if coming
                else "work is waiting: " + "; ".join(d["why"]) + " (the pool's free capacity should take it)")))
            continue
        idle = [h for h in alive[pool] if not why[h] and now - last_busy[h] >= settings["cooldown"]]
        # The highest-numbered go first: the names stay compact, and the choice is the same on a repeat.
        idle = sorted(idle, key=_number, reverse=True)[: max(have - lo, 0)]
        if idle:
            decisions.append(dict(base, action="remove", count=len(idle), hosts=idle,
                                  reason=f"idle for at least {settings['cooldown']} s; the pool keeps {have - len(idle)} (minimum {lo})"))
        else:
            decisions.append(dict(base, action="none", reason="no worker idle past the cooldown" if have > lo
                                  else f"at the minimum {lo}"))
    # Additions still coming from earlier runs stay recorded until they arrive or time out.
    for entry in previous.get("in_flight", []):
        if now - entry["time"] < add_timeout and pending.get(entry["pool"]):
            in_flight.append(entry)
    record = {"time": now, "dry_run": dry_run, "decisions": decisions, "last_busy": last_busy, "in_flight": in_flight}
    return decisions, record


def last_record(lines):
    """The newest record of a decisions log (an iterable of JSON lines). A torn last line (a crash
    while writing) and lines that are not records (a runner's result lines) are skipped."""
    found = None
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and "last_busy" in record:
            found = record
    return found
