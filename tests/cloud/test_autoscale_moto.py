"""The autoscaler's decisions carried out on AWS, against a local EC2 emulator (moto server).

playbooks/autoscale.yml runs for real (inventories/aws, provision, scale.yml, remove_worker.yml)
with what the Spark master and the Swarm would show given as the observation
(-e autoscaler_observed: no machine of moto answers SSH, so nothing is read from them); boto3
reads back which machines exist. No SSH leaves this machine (test_aws_moto's env): the hosts
are unreachable (rc 4), which is why the cluster has no hub (an unreachable Swarm manager ends
the run before the machines change) and the Swarm steps are left to the lab.

    pytest -q -rs tests/cloud/test_autoscale_moto.py
"""

import json

import pytest

# The fixtures (moto's server, its client, the playbooks' environment) are test_aws_moto's.
from test_aws_moto import CLUSTER, _alive, _cluster_names, _playbook, ec2, env, moto_url  # noqa: F401  pylint: disable=unused-import

C = CLUSTER
POOLS = {
    "worker": {"min": 1, "max": 3, "cooldown": 0, "cores_per_worker": 16, "gpus_per_worker": 0, "gpu_shares_per_worker": 0},
    "gpu_worker": {"min": 0, "max": 2, "cooldown": 0, "cores_per_worker": 8, "gpus_per_worker": 1, "gpu_shares_per_worker": 1},
}


@pytest.fixture(scope="module")
def extra(tmp_path_factory):
    base = tmp_path_factory.mktemp("autoscale")
    path = base / "extra.json"
    path.write_text(json.dumps({
        "provision_admin_cidrs": ["203.0.113.0/24"],
        "provision_workers": 1,
        "provision_gpu_workers": 1,
        # No hub: its Swarm plays would find it unreachable and end the run before the machines change.
        "provision_hub": False,
        "provision_aws_image_owner": "099720109477",
        "provision_aws_image_name": "ubuntu/images/hvm-ssd/ubuntu-*",
        "provision_wait_for_connection": False,
        "autoscaler_pools": POOLS,
        "autoscaler_executor_cores": 20,
        "autoscaler_decisions_log": str(base / "autoscale.jsonl"),
    }))
    return path


def _worker(host, cores=16, used=0, gpus=0, gpus_used=0):
    gpu = {"gpu": {"name": "gpu", "addresses": [str(n) for n in range(gpus)]}} if gpus else {}
    gpu_used = {"gpu": {"name": "gpu", "addresses": [str(n) for n in range(gpus_used)]}} if gpus else {}
    return {"id": f"worker-{host}", "host": host, "state": "ALIVE", "cores": cores, "coresused": used,
            "coresfree": cores - used, "resources": gpu, "resourcesused": gpu_used}


def _observed(tmp_path, workers, apps=(), tasks=()):
    path = tmp_path / "observed.json"
    path.write_text(json.dumps({"autoscaler_observed": {
        "spark_master": {"status": "ALIVE", "workers": workers, "activeapps": list(apps)},
        "yarn_metrics": {}, "swarm_tasks": list(tasks), "swarm_nodes": []}}))
    return f"@{path}"


def _log(extra):
    return [json.loads(line) for line in open(json.loads(extra.read_text())["autoscaler_decisions_log"], encoding="utf-8")]


BUSY = [_worker(f"{C}-worker-1", used=16), _worker(f"{C}-gpu-worker-1", cores=8, used=8, gpus=1, gpus_used=1)]
WAITING = [{"id": "app-1", "name": "etl", "state": "WAITING", "cores": 0, "resourcesperexecutor": []}]
NOTEBOOK = [{"ID": "t1", "ServiceID": "jupyter-alice", "DesiredState": "running",
             "Status": {"State": "pending", "Err": "no suitable node (insufficient resources on 2 nodes)"},
             "Spec": {"Resources": {"Reservations": {"GenericResources": [
                 {"DiscreteResourceSpec": {"Kind": "NVIDIA-GPU", "Value": 1}}]}}}}]


def test_a_the_cluster(env, extra, ec2):
    result = _playbook(env, extra, "provision.yml")
    assert result.returncode == 0
    assert _cluster_names(ec2) == sorted(f"{C}-{n}" for n in ("gpu-worker-1", "master", "worker-1"))


def test_b_waiting_work_adds_exactly_the_decided_machines(env, extra, ec2, tmp_path):
    result = _playbook(env, extra, "autoscale.yml", "-e", _observed(tmp_path, BUSY, WAITING, NOTEBOOK))
    # The converge of the new machines finds them unreachable (no SSH leaves this machine).
    assert result.returncode == 4, result.stdout[-3000:]
    (record,) = _log(extra)
    by_pool = {d["pool"]: d for d in record["decisions"]}
    # 20 cores wanted on 16-core workers: two; one GPU share: one GPU worker.
    assert (by_pool["worker"]["action"], by_pool["worker"]["count"]) == ("add", 2)
    assert (by_pool["gpu_worker"]["action"], by_pool["gpu_worker"]["count"]) == ("add", 1)
    assert _cluster_names(ec2) == sorted(f"{C}-{n}" for n in (
        "gpu-worker-1", "gpu-worker-2", "master", "worker-1", "worker-2", "worker-3"))
    (gpu,) = _alive(ec2, **{"tag:Name": f"{C}-gpu-worker-2"})
    assert gpu["TagMap"]["sparkfleet-role"] == "gpu_worker"


def test_c_a_repeated_run_adds_nothing_more(env, extra, ec2, tmp_path):
    before = _cluster_names(ec2)
    # The new machines have not registered yet: the master shows what it showed.
    result = _playbook(env, extra, "autoscale.yml", "-e", _observed(tmp_path, BUSY, WAITING, NOTEBOOK))
    assert result.returncode in (0, 4), result.stdout[-3000:]
    record = _log(extra)[-1]
    assert {d["pool"]: d["action"] for d in record["decisions"]} == {"worker": "none", "gpu_worker": "none"}
    assert _cluster_names(ec2) == before


def test_d_idle_workers_are_removed_down_to_the_minimum(env, extra, ec2, tmp_path):
    idle = [_worker(f"{C}-worker-{n}") for n in (1, 2, 3)] + [
        _worker(f"{C}-gpu-worker-{n}", cores=8, gpus=1) for n in (1, 2)]
    result = _playbook(env, extra, "autoscale.yml", "-e", _observed(tmp_path, idle))
    assert result.returncode in (0, 4), result.stdout[-3000:]
    record = _log(extra)[-1]
    removed = {d["pool"]: d["hosts"] for d in record["decisions"] if d["action"] == "remove"}
    assert removed == {"worker": [f"{C}-worker-3", f"{C}-worker-2"],
                       "gpu_worker": [f"{C}-gpu-worker-2", f"{C}-gpu-worker-1"]}
    assert _cluster_names(ec2) == sorted(f"{C}-{n}" for n in ("master", "worker-1"))


def test_e_a_dry_run_changes_nothing(env, extra, ec2, tmp_path):
    before = _cluster_names(ec2)
    result = _playbook(env, extra, "autoscale.yml", "-e", _observed(tmp_path, BUSY[:1], WAITING),
                       "-e", "autoscaler_dry_run=true")
    assert result.returncode in (0, 4), result.stdout[-3000:]
    record = _log(extra)[-1]
    assert record["dry_run"] is True and record["decisions"][0]["action"] == "add"
    assert _cluster_names(ec2) == before


def test_f_teardown(env, extra, ec2):
    result = _playbook(env, extra, "teardown.yml", "-e", f"teardown_confirm={CLUSTER}")
    assert result.returncode == 0
    assert _cluster_names(ec2) == []
