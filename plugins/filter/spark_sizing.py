# -*- coding: utf-8 -*-
# Copyright: sparkfleet contributors
# Apache License 2.0
"""Spark sizing filters: derive worker and executor resources from host facts.

The ``spark`` role's defaults use these, so a plain inventory gets sensible
numbers while every figure stays an ordinary variable a user can override.
The settings they size with (the rounding step, the reserved cores, the cores
of an executor) are arguments: their defaults live in the roles' defaults
(roles/cluster_defaults, roles/spark), documented there, not here.

``spark_reserved_memory_mb(facts, step_mb)``
    Memory a worker host keeps for the OS and the Spark daemons: 10% of its
    memory, at least 1 GiB.

``spark_worker_resources(facts, reserved_cores, reserved_memory_mb, step_mb)``
    Cores and memory a standalone worker offers to executors: all vCPUs and
    memory less what is reserved (never less than 1 core and 512 MiB).

Memory derived from facts is rounded down to a multiple of ``step_mb``: a
kernel update that shifts MemTotal by a few MB then leaves every figure, and
so every host's configuration, as it was (unless the shift crosses a step).

``spark_worker_offer(hostvars_of_a_worker, reserved_cores, step_mb)``
    What one worker offers, seen from any host of the play: its inventory
    overrides (spark_worker_cores, spark_worker_memory_mb, spark_worker_reserved_*,
    spark_memory_rounding_mb) where set, otherwise derived from its facts as
    above with ``reserved_cores`` and ``step_mb`` (hostvars hold no role
    defaults, so the caller passes those).

``spark_executor_sizing(offers, max_cores, headroom=0.1)``
    Executor cores and heap for a cluster whose workers make ``offers``: sized
    on the smallest worker so an executor fits anywhere; at most ``max_cores``
    cores, as many executors as
    fit, each an equal share of memory less ``headroom`` for JVM overhead
    (standalone workers do not add spark.executor.memoryOverhead). A worker
    that offers less than 1 core or 512 MiB is left out: the spark role's checks
    refuse it with a sentence naming the worker and the variable, which an error
    here, raised on every host that sizes executors, would hide.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

MIN_WORKER_MEMORY_MB = 512
MIN_EXECUTOR_MEMORY_MB = 512
MIN_RESERVED_MEMORY_MB = 1024


def _round_down(value, step):
    return value - value % step if step > 1 else value


def _as_int(value, name):
    if isinstance(value, bool):
        raise AnsibleFilterError(f"{name} must be an integer, got {value!r}")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise AnsibleFilterError(f"{name} must be an integer, got {value!r}")


def _facts_needed(facts, who="the host"):
    if not isinstance(facts, Mapping):
        raise AnsibleFilterError("expected a host's ansible_facts mapping")
    vcpus = facts.get("processor_vcpus") or facts.get("processor_count")
    total_mb = facts.get("memtotal_mb")
    if vcpus is None or total_mb is None:
        raise AnsibleFilterError(
            f"the facts processor_vcpus and memtotal_mb of {who} are unknown: gather facts on it "
            "(or keep a fact cache), or set spark_worker_cores and spark_worker_memory_mb"
        )
    return _as_int(vcpus, "processor_vcpus"), _as_int(total_mb, "memtotal_mb")


def _step(step_mb):
    step = _as_int(step_mb, "step_mb")
    if step < 1:
        raise AnsibleFilterError(f"step_mb must be at least 1, got {step_mb!r}")
    return step


def spark_reserved_memory_mb(facts, step_mb):
    step = _step(step_mb)
    total_mb = _facts_needed(facts)[1]
    total_mb = _round_down(total_mb, step)
    return max(MIN_RESERVED_MEMORY_MB, _round_down(total_mb // 10, step))


def spark_worker_resources(facts, reserved_cores, reserved_memory_mb, step_mb):
    step = _step(step_mb)
    vcpus, total_mb = _facts_needed(facts)
    reserved_cores = _as_int(reserved_cores, "reserved_cores")
    reserved_memory_mb = _as_int(reserved_memory_mb, "reserved_memory_mb")
    offered = _round_down(_round_down(total_mb, step) - reserved_memory_mb, step)
    return {
        "cores": max(1, vcpus - reserved_cores),
        "memory_mb": max(MIN_WORKER_MEMORY_MB, offered),
    }


def spark_worker_offer(hostvars, reserved_cores, step_mb):
    if not isinstance(hostvars, Mapping):
        raise AnsibleFilterError("spark_worker_offer expects a worker's hostvars")
    name = hostvars.get("inventory_hostname", "a worker")
    cores = hostvars.get("spark_worker_cores")
    memory_mb = hostvars.get("spark_worker_memory_mb")
    if cores is None or memory_mb is None:
        facts = hostvars.get("ansible_facts") or {}
        _facts_needed(facts, name)
        step = hostvars.get("spark_memory_rounding_mb", step_mb)
        reserved_mb = hostvars.get("spark_worker_reserved_memory_mb")
        if reserved_mb is None:
            reserved_mb = spark_reserved_memory_mb(facts, step)
        derived = spark_worker_resources(facts, hostvars.get("spark_worker_reserved_cores", reserved_cores), reserved_mb, step)
        cores = derived["cores"] if cores is None else cores
        memory_mb = derived["memory_mb"] if memory_mb is None else memory_mb
    return {
        "host": name,
        "cores": _as_int(cores, f"spark_worker_cores of {name}"),
        "memory_mb": _as_int(memory_mb, f"spark_worker_memory_mb of {name}"),
    }


def spark_executor_sizing(offers, max_cores, headroom=0.1):
    offers = [(_as_int(o["cores"], "cores"), _as_int(o["memory_mb"], "memory_mb")) for o in offers or []]
    if not offers:
        raise AnsibleFilterError("spark_executor_sizing needs at least one worker offer")
    usable = [o for o in offers if o[0] >= 1 and o[1] >= MIN_WORKER_MEMORY_MB] or [(1, MIN_WORKER_MEMORY_MB)]
    worker_cores = min(offer[0] for offer in usable)
    worker_memory_mb = min(offer[1] for offer in usable)
    max_cores = _as_int(max_cores, "max_cores")
    if max_cores < 1:
        raise AnsibleFilterError(f"max_cores must be at least 1, got {max_cores}")
    try:
        headroom = float(headroom)
    except (TypeError, ValueError):
        raise AnsibleFilterError(f"headroom must be a number, got {headroom!r}")
    if not 0 <= headroom < 1:
        raise AnsibleFilterError("headroom must be in [0, 1)")
    cores = min(max_cores, worker_cores)
    per_worker = max(1, worker_cores // cores)
    memory_mb = int(worker_memory_mb / per_worker * (1 - headroom))
    memory_mb = max(MIN_EXECUTOR_MEMORY_MB, memory_mb - memory_mb % 128)
    return {"cores": cores, "memory_mb": memory_mb, "per_worker": per_worker}


class FilterModule:
    """Spark sizing filters."""

    def filters(self):
        return {
            "spark_reserved_memory_mb": spark_reserved_memory_mb,
            "spark_worker_resources": spark_worker_resources,
            "spark_worker_offer": spark_worker_offer,
            "spark_executor_sizing": spark_executor_sizing,
        }
