"""The preflight refuses impossible cluster-manager combinations before any host changes.

Runs the compute roles' checks as the layer plays do (each role's validate entry point: argument
spec and tasks/validate.yml) with ansible-playbook against localhost in check mode, and reads the
message it stops with.
"""

import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
ROLES = ["sparkfleet.cluster.spark", "sparkfleet.cluster.hadoop", "sparkfleet.cluster.mesos", "sparkfleet.cluster.livy"]

PLAY = """
- name: Compute preflight on localhost
  hosts: spark_masters:spark_workers:hdfs_namenodes:yarn_nodemanagers:mesos_masters:mesos_agents:livy
  become: false
  gather_facts: true
  gather_subset: ["!all", "!min", "hardware", "network", "distribution"]
  vars:
    sparkfleet_preflight: true
  tasks:
    - name: Check the inputs of each role.
      ansible.builtin.include_role:
        name: "{{{{ item }}}}"
        tasks_from: validate
        public: true
      loop: {roles}
"""

INVENTORY = {"all": {"children": {
    "role_master": {"hosts": {"localhost": {"ansible_connection": "local",
                                            "ansible_python_interpreter": sys.executable}}},
    "role_worker": {"hosts": {"localhost": {}}}}}}


def preflight(tmp_path, inventory=None, **extra):
    (tmp_path / "hosts.yml").write_text(json.dumps(inventory or INVENTORY))
    roles = [r for r in ROLES if (ROOT / "roles" / r.rsplit(".", 1)[1]).is_dir()]
    (tmp_path / "play.yml").write_text(PLAY.format(roles=json.dumps(roles)))
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1",
               ANSIBLE_CACHE_PLUGIN="memory",
               ANSIBLE_COLLECTIONS_PATH=str(ROOT / "collections"))
    result = subprocess.run(
        [str(pathlib.Path(sys.executable).with_name("ansible-playbook")), "--check",
         "-i", str(ROOT / "inventories" / "components.yml"), "-i", str(tmp_path / "hosts.yml"),
         "-e", json.dumps(extra), str(tmp_path / "play.yml")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    return result.returncode, result.stdout + result.stderr


def test_mesos_with_spark_4_is_refused(tmp_path):
    rc, out = preflight(tmp_path, spark_version="4.0.1", spark_cluster_manager="mesos",
                        mesos_tarball_url="https://artifacts.example/mesos.tar.gz", mesos_checksum="sha256:" + "a" * 64)
    assert rc != 0, out
    assert "spark_cluster_manager is 'mesos' but spark_version is 4.0.1" in out
    assert "Spark 4 removed Mesos support" in out


def test_livy_with_spark_4_is_refused(tmp_path):
    rc, out = preflight(tmp_path, spark_version="4.0.1", spark_cluster_manager="yarn", livy_enabled=True)
    assert rc != 0, out
    assert "livy_enabled is true" in out and "spark_version is 4.0.1" in out


def test_yarn_with_spark_4_is_accepted(tmp_path):
    rc, out = preflight(tmp_path, spark_version="4.0.1", spark_cluster_manager="yarn")
    assert rc == 0, out
    assert "failed=0" in out
    # The hadoop role's checks ran (they are skipped when YARN is not chosen).
    assert "Hadoop | Check the cluster layout" in out


def test_livy_with_spark_3_5_on_yarn_is_accepted(tmp_path):
    rc, out = preflight(tmp_path, spark_version="3.5.8", spark_cluster_manager="yarn", livy_enabled=True,
                        livy_users=["alice"])
    assert rc == 0, out


def test_livy_without_an_account_to_log_in_is_refused(tmp_path):
    # No notebook host and no livy_users: nginx would let nobody in.
    rc, out = preflight(tmp_path, spark_version="3.5.8", spark_cluster_manager="yarn", livy_enabled=True)
    assert rc != 0, out
    assert "livy_users is [] and livy_superusers is []" in out
    rc, out = preflight(tmp_path, spark_version="3.5.8", spark_cluster_manager="yarn", livy_enabled=True,
                        livy_users=["alice"], livy_superusers=["Bob&user.name=x"])
    assert rc != 0, out
    assert "every name must be an account name" in out


def test_mesos_without_an_artifact_says_why(tmp_path):
    rc, out = preflight(tmp_path, spark_version="3.5.8", spark_cluster_manager="mesos")
    assert rc != 0, out
    assert "Apache Mesos was retired and ships no current binaries" in out
    assert "mesos_package_url" in out and "mesos_tarball_url" in out


def test_mesos_with_spark_3_5_and_a_build_is_accepted(tmp_path):
    rc, out = preflight(tmp_path, spark_version="3.5.8", spark_cluster_manager="mesos",
                        mesos_package_url="https://artifacts.example/mesos_1.11.0_amd64.deb",
                        mesos_checksum="sha256:" + "a" * 64)
    assert rc == 0, out


def _two_masters(zookeeper):
    """localhost and a second master (also this machine), with these hosts in role_zookeeper."""
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    groups = {"role_master": {"hosts": {"localhost": local, "m2": local}}, "role_worker": {"hosts": {"localhost": {}}}}
    if zookeeper:
        groups["role_zookeeper"] = {"hosts": {host: {} for host in zookeeper}}
    return {"all": {"children": groups}}


MESOS_BUILD = {"spark_version": "3.5.8", "spark_cluster_manager": "mesos", "mesos_checksum": "sha256:" + "a" * 64,
               "mesos_package_url": "https://artifacts.example/mesos_1.11.0_amd64.deb"}


def test_several_mesos_masters_without_zookeeper_are_refused(tmp_path):
    rc, out = preflight(tmp_path, inventory=_two_masters([]), **MESOS_BUILD)
    assert rc != 0, out
    assert "'mesos_masters' has 2 masters (localhost, m2) that elect their leader in ZooKeeper" in out
    assert "no host is in the 'zookeeper' group" in out


def test_several_mesos_masters_with_a_zookeeper_group_are_accepted(tmp_path):
    rc, out = preflight(tmp_path, inventory=_two_masters(["localhost"]), **MESOS_BUILD)
    assert rc == 0, out


def test_standalone_with_spark_4_needs_no_mesos_build_nor_hadoop(tmp_path):
    # spark_cluster_manager left to its default (standalone): the mesos and hadoop checks are skipped.
    rc, out = preflight(tmp_path, spark_version="4.0.1")
    assert rc == 0, out
    assert "retired" not in out


def test_an_hdfs_home_user_that_is_not_an_account_name_is_refused(tmp_path):
    rc, out = preflight(tmp_path, spark_version="4.0.1", spark_cluster_manager="yarn",
                        hadoop_hdfs_home_users=["spark", "x; touch /tmp/owned"])
    assert rc != 0, out
    assert "x; touch /tmp/owned: not an account name" in out
