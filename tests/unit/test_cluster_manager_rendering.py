"""The master URL, one rule for spark.master and livy.spark.master (and the mesos role's ZooKeeper
URL it builds on), resolved from the roles' own defaults and vars with the shared RoleRenderer."""

from conftest import RoleRenderer

CLUSTER = {"spark_masters": ["m1"], "spark_workers": ["w1"], "livy": ["m1"], "mesos_masters": ["m1"],
           "mesos_agents": ["w1"]}


def test_livy_uses_the_standalone_master_by_default():
    renderer = RoleRenderer("livy", CLUSTER)
    assert renderer.value("__livy_spark_master", "m1") == "spark://m1:7077"


def test_livy_follows_the_cluster_manager():
    assert RoleRenderer("livy", CLUSTER, extra={"spark_cluster_manager": "yarn"}).value("__livy_spark_master", "m1") == "yarn"
    mesos = RoleRenderer("livy", CLUSTER, extra={"spark_cluster_manager": "mesos"})
    assert mesos.value("__livy_spark_master", "m1") == "mesos://m1:5050"
    zk = RoleRenderer("livy", CLUSTER,
                      extra={"spark_cluster_manager": "mesos", "mesos_zookeeper_url": "zk://m1:2181,m2:2181/mesos"})
    assert zk.value("__livy_spark_master", "m1") == "mesos://zk://m1:2181,m2:2181/mesos"


def test_mesos_role_builds_the_zookeeper_url_from_the_zookeeper_group():
    renderer = RoleRenderer("mesos", {"mesos_masters": ["m1", "m2", "m3"], "mesos_agents": ["w1"],
                                      "zookeeper": ["m1", "m2", "m3"]})
    assert renderer.value("mesos_zookeeper_url", "m1") == "zk://m1:2181,m2:2181,m3:2181/mesos"
    assert str(renderer.value("__mesos_quorum", "m1")) == "2"
    single = RoleRenderer("mesos", {"mesos_masters": ["m1"], "mesos_agents": ["w1"], "zookeeper": ["z1"]})
    assert single.value("mesos_zookeeper_url", "m1") == ""
    assert single.value("__mesos_master_url", "w1") == "m1:5050"
