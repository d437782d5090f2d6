# -*- coding: utf-8 -*-
# Copyright: sparkfleet contributors
# Apache License 2.0
"""Which cluster manager runs Spark, and what it implies.

``cluster_manager_problems(spark_version, cluster_manager='standalone', livy_enabled=False)``
    The impossible combinations of Spark version, cluster manager and Livy, as
    messages that name the variables to change (empty list: the combination is
    possible). The one place these rules live: the spark, livy and mesos roles'
    preflight checks all call it.

    - ``spark_cluster_manager`` is one of standalone, yarn, mesos;
    - mesos: Spark 4 removed Mesos support, and the mesos path is pinned to the
      Spark 3.5 line (the last one that ships it);
    - Livy (0.9, incubating) supports the Spark 3.5 line only.

``cluster_manager_master_url(cluster_manager, spark_masters=None, spark_master_port=7077,
mesos_masters=None, mesos_master_port=5050, mesos_zookeeper_url='')``
    What drivers pass as ``--master`` (``spark.master``, ``livy.spark.master``):
    ``spark://m1:7077[,m2:7077]``, ``yarn`` (the ResourceManager's address comes
    from HADOOP_CONF_DIR), ``mesos://zk://z1:2181,z2:2181/mesos`` with ZooKeeper or
    ``mesos://m1:5050`` without.
"""

from __future__ import annotations

import re

from ansible.errors import AnsibleFilterError

MANAGERS = ("standalone", "yarn", "mesos")
# The Spark line the mesos path is pinned to, and the one Livy supports.
MESOS_SPARK_LINE = (3, 5)
LIVY_SPARK_LINE = (3, 5)


def _line(spark_version):
    match = re.match(r"^\s*(\d+)\.(\d+)(?:\.\d+)?", str(spark_version or ""))
    if not match:
        raise AnsibleFilterError(f"spark_version must look like 3.5.8 or 4.0.1, got {spark_version!r}")
    return int(match.group(1)), int(match.group(2))


def _truthy(value):
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


def cluster_manager_problems(spark_version, cluster_manager="standalone", livy_enabled=False):
    line = _line(spark_version)
    manager = str(cluster_manager or "")
    shown = ".".join(map(str, line))
    problems = []
    if manager not in MANAGERS:
        problems.append(f"spark_cluster_manager must be one of {', '.join(MANAGERS)}, not {manager!r}.")
    elif manager == "mesos" and line != MESOS_SPARK_LINE:
        why = "Spark 4 removed Mesos support" if line[0] >= 4 else "the mesos path is tested with Spark 3.5 only"
        problems.append(
            f"spark_cluster_manager is 'mesos' but spark_version is {spark_version} (the {shown} line): {why}, "
            f"so the mesos path is pinned to the Spark {'.'.join(map(str, MESOS_SPARK_LINE))} line. "
            "Set spark_version to a 3.5.x release, or spark_cluster_manager to 'yarn' or 'standalone'.")
    if _truthy(livy_enabled) and line != LIVY_SPARK_LINE:
        problems.append(
            f"livy_enabled is true (Livy runs on the 'livy' group) but spark_version is {spark_version} "
            f"(the {shown} line): Livy 0.9 supports the Spark {'.'.join(map(str, LIVY_SPARK_LINE))} line only. "
            "Set spark_version to a 3.5.x release, or livy_enabled to false (use Spark Connect with Spark 4).")
    return problems


def _hosts(value):
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value else []
    return [str(h) for h in value]


def cluster_manager_master_url(cluster_manager, spark_masters=None, spark_master_port=7077,
                               mesos_masters=None, mesos_master_port=5050, mesos_zookeeper_url=""):
    manager = str(cluster_manager or "")
    if manager == "yarn":
        return "yarn"
    if manager == "standalone":
        masters = _hosts(spark_masters)
        if not masters:
            raise AnsibleFilterError("the standalone master URL needs at least one host in spark_masters_group")
        return "spark://" + ",".join(f"{host}:{int(spark_master_port)}" for host in masters)
    if manager == "mesos":
        if mesos_zookeeper_url:
            if not str(mesos_zookeeper_url).startswith("zk://"):
                raise AnsibleFilterError(f"mesos_zookeeper_url must start with zk://, got {mesos_zookeeper_url!r}")
            return f"mesos://{mesos_zookeeper_url}"
        masters = _hosts(mesos_masters)
        if not masters:
            raise AnsibleFilterError("the mesos master URL needs a host in mesos_masters_group (or mesos_zookeeper_url)")
        return f"mesos://{masters[0]}:{int(mesos_master_port)}"
    raise AnsibleFilterError(f"spark_cluster_manager must be one of {', '.join(MANAGERS)}, not {manager!r}")


class FilterModule:
    """Cluster manager filters."""

    def filters(self):
        return {
            "cluster_manager_problems": cluster_manager_problems,
            "cluster_manager_master_url": cluster_manager_master_url,
        }
