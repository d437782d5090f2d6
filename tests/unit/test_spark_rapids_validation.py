"""The spark role's preflight refuses RAPIDS settings that cannot work, before any host
changes: the role's `validate` entry point, run by ansible-playbook on localhost."""

import json
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHECKSUM = "sha256:" + "ab" * 32

PLAY = """
- hosts: spark_masters
  gather_facts: true
  gather_subset: [min, hardware]
  tasks:
    # Public, as the playbooks include it: the shared roles it calls (platform's ports check) then
    # see the cluster-wide defaults of its dependency (cluster_defaults), which it hands them.
    - ansible.builtin.include_role:
        name: sparkfleet.cluster.spark
        tasks_from: validate
        public: true
"""

SIZE = {"spark_worker_cores": 4, "spark_worker_memory_mb": 8192}
INVENTORY = {
    "all": {
        "hosts": {"localhost": {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}},
        "children": {
            "spark_masters": {"hosts": {"localhost": {}}},
            # Not reached: their sizes are given, as an inventory may.
            "spark_workers": {"hosts": {"w1": SIZE}, "children": {"gpu_workers": {}}},
            "gpu_workers": {"hosts": {"g1": SIZE}},
        },
    }
}


def preflight(tmp_path, **extra):
    (tmp_path / "play.yml").write_text(PLAY)
    (tmp_path / "hosts.json").write_text(json.dumps(INVENTORY))
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=str(ROOT / "collections"),
               ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1", ANSIBLE_CACHE_PLUGIN="memory")
    vars_ = dict({"spark_version": "4.0.1", "sparkfleet_preflight": True},
                 **extra)
    return subprocess.run(
        ["ansible-playbook", "-i", str(tmp_path / "hosts.json"), str(tmp_path / "play.yml"),
         "-e", json.dumps(vars_)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )


GOOD = {"spark_rapids_enabled": True, "spark_rapids_jar_checksum": CHECKSUM,
        "spark_executor_gpu_amount": 1, "spark_task_gpu_amount": 0.25}


def test_good_rapids_settings_pass(tmp_path):
    run = preflight(tmp_path, **GOOD)
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.parametrize(
    "bad, named",
    [
        ({"spark_rapids_jar_checksum": ""}, "spark_rapids_jar_checksum"),
        ({"spark_rapids_jar_checksum": "sha1:" + "ab" * 20}, "spark_rapids_jar_checksum"),
        ({"spark_executor_gpu_amount": 2, "spark_task_gpu_amount": 1}, "spark_executor_gpu_amount 1"),
        ({"spark_executor_gpu_amount": 0, "spark_task_gpu_amount": 0}, "spark_executor_gpu_amount 1"),
        ({"spark_gpu_workers_group": "no_such_group"}, "spark_gpu_workers_group"),
        ({"spark_rapids_settings": {"spark.sql.shuffle.partitions": "8"}}, "spark_rapids_settings"),
    ],
)
def test_bad_rapids_settings_stop_with_the_variable_named(tmp_path, bad, named):
    run = preflight(tmp_path, **dict(GOOD, **bad))
    assert run.returncode != 0
    assert named in run.stdout, run.stdout[-3000:]
