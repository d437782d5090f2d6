#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: sparkfleet contributors
# Apache License 2.0

from __future__ import annotations

DOCUMENTATION = r"""
module: autoscale_plan
short_description: Decide how the worker pools follow the waiting work, and log the decision
version_added: 0.1.0
description:
  - Reads what the cluster shows (the Spark master's C(/json/), YARN's cluster metrics, the Swarm's
    tasks and nodes) and the newest record of the decisions log, and decides per pool (C(worker),
    C(gpu_worker)) to add machines, remove idle ones, or do nothing, each with its reason.
  - Appends one JSON line to O(decisions_log) per run (the time, the decisions, the last time each
    worker was busy and the additions not yet seen as workers). The next run reads that line back,
    so a run repeated after a crash asks for no machine twice, and a worker's cooldown counts from
    the last run that saw it busy.
  - Changes nothing in the cluster; C(playbooks/autoscale.yml) carries the decisions out.
options:
  pools:
    description:
      - Per pool (C(worker), C(gpu_worker)), C(min), C(max), C(cooldown) (seconds idle before removal),
        C(cores_per_worker), C(gpus_per_worker) and C(gpu_shares_per_worker) (Swarm GPU shares one
        machine offers).
    type: dict
    required: true
  pool_hosts:
    description: "The inventory's members of each pool, C({worker: [...], gpu_worker: [...]}); other hosts are left alone."
    type: dict
    required: true
  spark_master:
    description: The leading standalone master's C(/json/) answer; empty with another cluster manager.
    type: dict
    default: {}
  yarn_metrics:
    description: The ResourceManager's C(/ws/v1/cluster/metrics) answer; empty without YARN.
    type: dict
    default: {}
  swarm_tasks:
    description: The Swarm's tasks as the Engine API gives them (community.docker.docker_swarm_info, verbose_output).
    type: list
    elements: dict
    default: []
  swarm_nodes:
    description: The Swarm's nodes as the Engine API gives them, to name the node a task runs on.
    type: list
    elements: dict
    default: []
  swarm_services:
    description: The Swarm's services as the Engine API gives them, to name the service of a pending task in the log.
    type: list
    elements: dict
    default: []
  executor_cores:
    description: Cores one executor of a WAITING Spark application asks for (the master's JSON does not say).
    type: int
    default: 1
  ignored_apps:
    description: Names of Spark applications whose WAITING state is never demand (an idle Spark Connect server).
    type: list
    elements: str
    default: []
  gpu_kind:
    description: The Swarm generic resource kind of a GPU share.
    type: str
    default: NVIDIA-GPU
  add_timeout:
    description: Seconds an addition counts as on its way; after that, a run that still sees the need decides again.
    type: int
    default: 1800
  decisions_log:
    description: The JSON-lines decisions log (created with its directory, mode 0640).
    type: path
    required: true
  dry_run:
    description: Log the decisions as a dry run's (no addition is put in flight); the playbook carries none out.
    type: bool
    default: false
  now:
    description: Seconds since the epoch to decide at (tests); default the controller's clock.
    type: float
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: In check mode the decisions are returned and nothing is written.
  diff_mode:
    support: none
  platform:
    platforms: posix
author:
  - sparkfleet maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Autoscale | Decide.
  sparkfleet.cluster.autoscale_plan:
    pools: "{{ autoscale_pools }}"
    pool_hosts: {worker: "{{ groups['spark_workers'] | difference(groups['gpu_workers']) }}", gpu_worker: "{{ groups['gpu_workers'] }}"}
    spark_master: "{{ master_json }}"
    swarm_tasks: "{{ swarm.tasks }}"
    swarm_nodes: "{{ swarm.nodes }}"
    swarm_services: "{{ swarm.services }}"
    decisions_log: /var/log/sparkfleet/autoscale.jsonl
  register: plan
"""

RETURN = r"""
decisions:
  description: "One per pool, with C(action) (V(add), V(remove) or V(none)), C(pool), C(count), C(hosts), C(reason), C(alive), C(in_flight)."
  returned: always
  type: list
  elements: dict
add_workers:
  description: Workers to add (scale.yml's add_workers).
  returned: always
  type: int
add_gpu_workers:
  description: GPU workers to add (scale.yml's add_gpu_workers).
  returned: always
  type: int
remove:
  description: The workers to decommission and delete, highest numbers first.
  returned: always
  type: list
  elements: str
record:
  description: The line appended to the decisions log.
  returned: always
  type: dict
"""

import json
import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sparkfleet.cluster.plugins.module_utils.autoscale import (
    POOLS, decide, last_record, merge_demand, spark_demand, spark_workers, swarm_busy_nodes, swarm_demand, yarn_demand)


def _previous(path):
    try:
        with open(path, encoding="utf-8") as log:
            return last_record(log)
    except FileNotFoundError:
        return None


def _append(path, record):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o640)
    with os.fdopen(fd, "a", encoding="utf-8") as log:
        log.write(json.dumps(record, sort_keys=True) + "\n")
        log.flush()
        # The next run decides from this line: it must be on disk before anything is carried out.
        os.fsync(log.fileno())


def plan(params):
    """The module's work without AnsibleModule: (result, record)."""
    membership = {host: pool for pool, hosts in params["pool_hosts"].items() for host in hosts or []}
    workers = spark_workers(params["spark_master"], membership.get)
    demand = merge_demand(
        spark_demand(params["spark_master"], params["executor_cores"], membership.get, params["ignored_apps"]),
        yarn_demand(params["yarn_metrics"]),
        swarm_demand(params["swarm_tasks"], params["gpu_kind"], params["swarm_services"]))
    busy = swarm_busy_nodes(params["swarm_tasks"], params["swarm_nodes"])
    now = params["now"] if params.get("now") is not None else time.time()
    decisions, record = decide(params["pools"], workers, demand, _previous(params["decisions_log"]), now,
                               add_timeout=params["add_timeout"], busy_nodes=busy, dry_run=params["dry_run"])
    by_pool = {d["pool"]: d for d in decisions}
    result = {
        "decisions": decisions,
        "add_workers": by_pool.get("worker", {}).get("count", 0) if by_pool.get("worker", {}).get("action") == "add" else 0,
        "add_gpu_workers": (by_pool.get("gpu_worker", {}).get("count", 0)
                            if by_pool.get("gpu_worker", {}).get("action") == "add" else 0),
        "remove": [h for d in decisions if d["action"] == "remove" for h in d["hosts"]],
        "record": record,
    }
    return result, record


def main():
    module = AnsibleModule(
        argument_spec={
            "pools": {"type": "dict", "required": True},
            "pool_hosts": {"type": "dict", "required": True},
            "spark_master": {"type": "dict", "default": {}},
            "yarn_metrics": {"type": "dict", "default": {}},
            "swarm_tasks": {"type": "list", "elements": "dict", "default": []},
            "swarm_nodes": {"type": "list", "elements": "dict", "default": []},
            "swarm_services": {"type": "list", "elements": "dict", "default": []},
            "executor_cores": {"type": "int", "default": 1},
            "ignored_apps": {"type": "list", "elements": "str", "default": []},
            "gpu_kind": {"type": "str", "default": "NVIDIA-GPU"},
            "add_timeout": {"type": "int", "default": 1800},
            "decisions_log": {"type": "path", "required": True},
            "dry_run": {"type": "bool", "default": False},
            "now": {"type": "float"},
        },
        supports_check_mode=True,
    )
    missing = {pool: sorted({"min", "max", "cooldown", "cores_per_worker"} - set(settings or {}))
               for pool, settings in module.params["pools"].items()}
    missing = {pool: keys for pool, keys in missing.items() if keys}
    unknown = sorted(set(module.params["pools"]) - set(POOLS))
    if missing or unknown:
        module.fail_json(msg=f"autoscale_pools: unknown pools {unknown}, missing settings {missing} "
                             f"(pools are {list(POOLS)}; each needs min, max, cooldown, cores_per_worker)")
    params = dict(module.params, dry_run=module.params["dry_run"] or module.check_mode)
    result, record = plan(params)
    if not module.check_mode:
        _append(module.params["decisions_log"], record)
    acted = result["add_workers"] + result["add_gpu_workers"] + len(result["remove"]) > 0
    module.exit_json(changed=acted and not params["dry_run"], **result)


if __name__ == "__main__":
    main()
