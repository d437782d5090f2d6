"""The spark role under each cluster manager, rendered from its own defaults and vars."""

import pytest

from conftest import RoleRenderer

GROUPS = {"spark_masters": ["m1"], "spark_workers": ["w1"], "gpu_workers": [], "mesos_masters": ["m1"],
          "mesos_agents": ["w1"], "yarn_resourcemanagers": ["m1"], "yarn_nodemanagers": ["w1"]}


def spark(manager, **extra):
    return RoleRenderer("spark", GROUPS, extra=dict({"spark_cluster_manager": manager, "__spark_auth_secret": "s3cr3t"}, **extra))


def defaults(renderer, host="m1"):
    props = {}
    for line in renderer.render("spark-defaults.conf.j2", host).splitlines():
        if line.strip() and not line.startswith("#"):
            key, _sep, value = line.partition(" ")
            assert key not in props, f"{key} set twice"
            props[key] = value.strip()
    return props


def test_standalone_is_the_default_and_runs_the_daemons():
    renderer = RoleRenderer("spark", GROUPS, extra={"__spark_auth_secret": "s"})
    assert renderer.value("spark_cluster_manager", "m1") == "standalone"
    assert defaults(renderer)["spark.master"] == "spark://m1:7077"
    assert renderer.value("__spark_host_services", "m1") == ["spark-master", "spark-history-server"]
    assert renderer.value("__spark_host_services", "w1") == ["spark-worker"]
    env = renderer.render("spark-env.sh.j2", "m1")
    assert "HADOOP_CONF_DIR" not in env and "MESOS_NATIVE_JAVA_LIBRARY" not in env


def test_yarn_submits_to_yarn_and_runs_only_the_history_server():
    renderer = spark("yarn")
    props = defaults(renderer)
    assert props["spark.master"] == "yarn"
    assert props["spark.authenticate"] == "true"
    assert not [k for k in props if k.startswith("spark.mesos.")]
    assert renderer.value("__spark_host_services", "m1") == ["spark-history-server"]
    assert renderer.value("__spark_host_services", "w1") == []
    assert 'export HADOOP_CONF_DIR="/etc/hadoop/conf"' in renderer.render("spark-env.sh.j2", "m1").splitlines()
    custom = spark("yarn", hadoop_conf_dir="/srv/hadoop/conf")
    assert 'export HADOOP_CONF_DIR="/srv/hadoop/conf"' in custom.render("spark-env.sh.j2", "w1").splitlines()


@pytest.mark.parametrize("extra, master", [
    ({}, "mesos://m1:5050"),
    ({"mesos_zookeeper_url": "zk://m1:2181,m2:2181/mesos"}, "mesos://zk://m1:2181,m2:2181/mesos"),
])
def test_mesos_submits_to_the_mesos_masters_as_an_authenticated_framework(extra, master):
    renderer = spark("mesos", __spark_mesos_secret="fw-secret", **extra)
    props = defaults(renderer)
    assert props["spark.master"] == master
    assert props["spark.mesos.executor.home"] == "/opt/spark/current"
    assert props["spark.mesos.principal"] == "spark"
    assert props["spark.mesos.secret"] == "fw-secret"
    assert renderer.value("__spark_host_services", "w1") == []
    env = renderer.render("spark-env.sh.j2", "m1").splitlines()
    assert 'export MESOS_NATIVE_JAVA_LIBRARY="/opt/mesos/current/lib/libmesos.so"' in env
    deb = spark("mesos", mesos_package_url="https://a.example/mesos.deb")
    assert 'export MESOS_NATIVE_JAVA_LIBRARY="/usr/lib/libmesos.so"' in deb.render("spark-env.sh.j2", "m1").splitlines()


def test_the_standalone_worker_still_registers_with_the_standalone_master():
    units = {u["name"]: u for u in RoleRenderer("spark", GROUPS, extra={"__spark_auth_secret": "s"}).value("__spark_units", "w1")}
    assert units["spark-worker"]["exec_start"].endswith(" spark://m1:7077")


def test_jvm_options_reach_every_spark_jvm_and_none_are_set_by_default():
    import subprocess

    plain = spark("standalone")
    assert not [k for k in defaults(plain) if "JavaOptions" in k]
    assert "JAVA_OPTS" not in plain.render("spark-env.sh.j2", "m1") and "LAUNCHER_OPTS" not in plain.render("spark-env.sh.j2", "m1")

    options = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Dsparkfleet.note=two words"]
    tuned = spark("standalone", spark_jvm_options=options)
    props = defaults(tuned, "w1")
    # Applications: the administrator's defaults, which an application's extraJavaOptions add to.
    assert props["spark.driver.defaultJavaOptions"] == " ".join(options)
    assert props["spark.executor.defaultJavaOptions"] == " ".join(options)
    assert "spark.driver.extraJavaOptions" not in props and "spark.executor.extraJavaOptions" not in props
    # Daemons and the launcher: what bash exports from the rendered lines (quoted for the shell).
    exports = [line for line in tuned.render("spark-env.sh.j2", "w1").splitlines()
               if line.startswith(("export SPARK_DAEMON_JAVA_OPTS=", "export SPARK_LAUNCHER_OPTS="))]
    assert len(exports) == 2
    shown = subprocess.run(["bash", "-c", "\n".join(exports) + '\nprintf "%s\\n" "$SPARK_DAEMON_JAVA_OPTS" "$SPARK_LAUNCHER_OPTS"'],
                           capture_output=True, text=True, check=True).stdout.splitlines()
    assert shown == [" ".join(options)] * 2
