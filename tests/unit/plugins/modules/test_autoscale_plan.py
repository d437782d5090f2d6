"""autoscale_plan: the module around the decisions (plugins/module_utils/autoscale.py), and its log."""

import json
import os
import stat
import sys

import pytest
from ansible.module_utils.testing import patch_module_args

from conftest import load_plugin

FQ_UTILS = "ansible_collections.sparkfleet.cluster.plugins.module_utils.autoscale"
sys.modules.setdefault(FQ_UTILS, load_plugin("module_utils", "autoscale"))
plan_module = load_plugin("modules", "autoscale_plan")

POOLS = {"worker": {"min": 1, "max": 3, "cooldown": 60, "cores_per_worker": 8},
         "gpu_worker": {"min": 0, "max": 1, "cooldown": 60, "cores_per_worker": 8, "gpus_per_worker": 1,
                        "gpu_shares_per_worker": 2}}
HOSTS = {"worker": ["c-worker-1", "c-worker-2"], "gpu_worker": ["c-gpu-worker-1"]}


def _master(used1=8, waiting=True):
    workers = [{"host": "c-worker-1", "state": "ALIVE", "cores": 8, "coresused": used1, "coresfree": 8 - used1},
               {"host": "c-worker-2", "state": "ALIVE", "cores": 8, "coresused": 8, "coresfree": 0},
               {"host": "c-master", "state": "ALIVE", "cores": 8, "coresused": 0, "coresfree": 8}]
    apps = [{"id": "app-1", "name": "etl", "state": "WAITING", "cores": 0}] if waiting else []
    return {"status": "ALIVE", "workers": workers, "activeapps": apps}


def run(capsys, log, check_mode=False, **args):
    params = {"pools": POOLS, "pool_hosts": HOSTS, "decisions_log": str(log), "executor_cores": 4, **args}
    if check_mode:
        params["_ansible_check_mode"] = True
    with patch_module_args(params):
        with pytest.raises(SystemExit) as exit_info:
            plan_module.main()
    return exit_info.value.code, json.loads(capsys.readouterr().out)


def _lines(log):
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_an_addition_is_logged_and_not_repeated(tmp_path, capsys):
    log = tmp_path / "logs" / "autoscale.jsonl"
    code, result = run(capsys, log, spark_master=_master(), now=1000.0)
    assert code == 0 and result["changed"] is True
    assert (result["add_workers"], result["add_gpu_workers"], result["remove"]) == (1, 0, [])
    # A host of neither pool (the master, running a worker) is not counted.
    assert result["decisions"][0]["alive"] == 2
    assert stat.S_IMODE(os.stat(log).st_mode) == 0o640
    assert _lines(log) == [result["record"]]
    # The next run reads the line back: the machine is on its way, nothing is added again.
    code, again = run(capsys, log, spark_master=_master(), now=1060.0)
    assert (again["add_workers"], again["changed"]) == (0, False)
    assert len(_lines(log)) == 2


def test_a_notebook_waiting_for_gpu_shares_asks_for_a_gpu_worker(tmp_path, capsys):
    task = {"ID": "t1", "ServiceID": "jupyter-alice", "DesiredState": "running",
            "Status": {"State": "pending", "Err": "no suitable node (insufficient resources on 2 nodes)"},
            "Spec": {"Resources": {"Reservations": {"GenericResources": [
                {"DiscreteResourceSpec": {"Kind": "NVIDIA-GPU", "Value": 1}}]}}}}
    _code, result = run(capsys, tmp_path / "a.jsonl", spark_master=_master(waiting=False), swarm_tasks=[task], now=1000.0)
    assert (result["add_workers"], result["add_gpu_workers"]) == (0, 1)


def test_check_mode_and_dry_runs_change_nothing(tmp_path, capsys):
    log = tmp_path / "a.jsonl"
    _code, result = run(capsys, log, check_mode=True, spark_master=_master(), now=1000.0)
    assert result["add_workers"] == 1 and result["changed"] is False
    assert not log.exists()
    _code, result = run(capsys, log, dry_run=True, spark_master=_master(), now=1000.0)
    assert result["changed"] is False and _lines(log)[0]["dry_run"] is True
    # The dry run put nothing in flight: a real run adds.
    _code, result = run(capsys, log, spark_master=_master(), now=1010.0)
    assert result["add_workers"] == 1


def test_idle_workers_go_after_the_cooldown(tmp_path, capsys):
    log = tmp_path / "a.jsonl"
    idle = _master(used1=0, waiting=False)
    idle["workers"][1].update(coresused=0, coresfree=8)
    run(capsys, log, spark_master=idle, now=1000.0)
    _code, result = run(capsys, log, spark_master=idle, now=1060.0)
    assert result["remove"] == ["c-worker-2"]  # the minimum, 1, stays


def test_an_unknown_pool_or_a_missing_setting_is_refused(tmp_path, capsys):
    code, result = run(capsys, tmp_path / "a.jsonl", pools={"workers": {"min": 1}}, spark_master=_master())
    assert code == 1
    assert "unknown pools ['workers']" in result["msg"] and "cores_per_worker" in result["msg"]
    assert not (tmp_path / "a.jsonl").exists()
