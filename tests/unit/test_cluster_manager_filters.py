"""The one place the cluster-manager rules live (plugins/filter/cluster_manager.py)."""

import pytest
from ansible.errors import AnsibleFilterError

from conftest import load_plugin

cm = load_plugin("filter", "cluster_manager")


@pytest.mark.parametrize("manager", ["standalone", "yarn"])
@pytest.mark.parametrize("version", ["3.5.8", "4.0.1", "4.1.0"])
def test_standalone_and_yarn_take_any_spark(manager, version):
    assert cm.cluster_manager_problems(version, manager) == []


def test_mesos_with_spark_4_is_refused_naming_the_variables():
    problems = cm.cluster_manager_problems("4.0.1", "mesos")
    assert len(problems) == 1
    assert "spark_cluster_manager" in problems[0] and "spark_version" in problems[0]
    assert "Spark 4 removed Mesos" in problems[0]


def test_mesos_is_pinned_to_the_3_5_line():
    assert cm.cluster_manager_problems("3.5.8", "mesos") == []
    assert "pinned to the Spark 3.5 line" in cm.cluster_manager_problems("3.4.4", "mesos")[0]


def test_livy_with_spark_4_is_refused_naming_the_variables():
    problems = cm.cluster_manager_problems("4.0.1", "yarn", True)
    assert len(problems) == 1
    assert "livy_enabled" in problems[0] and "spark_version" in problems[0] and "3.5" in problems[0]
    assert cm.cluster_manager_problems("3.5.8", "yarn", True) == []
    assert cm.cluster_manager_problems("4.0.1", "yarn", False) == []


def test_both_problems_are_reported_at_once():
    assert len(cm.cluster_manager_problems("4.0.1", "mesos", "true")) == 2


def test_unknown_manager_and_bad_version():
    assert "must be one of" in cm.cluster_manager_problems("3.5.8", "kubernetes")[0]
    with pytest.raises(AnsibleFilterError, match="spark_version"):
        cm.cluster_manager_problems("latest", "yarn")


def test_master_urls():
    assert cm.cluster_manager_master_url("standalone", ["m1"]) == "spark://m1:7077"
    assert cm.cluster_manager_master_url("standalone", ["m1", "m2"], 7078) == "spark://m1:7078,m2:7078"
    assert cm.cluster_manager_master_url("yarn") == "yarn"
    assert cm.cluster_manager_master_url("mesos", [], 7077, ["m1", "m2"]) == "mesos://m1:5050"
    assert cm.cluster_manager_master_url("mesos", [], 7077, [], 5050, "zk://z1:2181/mesos") == "mesos://zk://z1:2181/mesos"


@pytest.mark.parametrize("args, match", [
    (("standalone", []), "spark_masters_group"),
    (("mesos", [], 7077, []), "mesos_masters_group"),
    (("mesos", [], 7077, ["m1"], 5050, "m1:2181"), "zk://"),
    (("k8s",), "must be one of"),
])
def test_master_url_errors_name_the_variable(args, match):
    with pytest.raises(AnsibleFilterError, match=match):
        cm.cluster_manager_master_url(*args)
