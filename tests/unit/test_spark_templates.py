"""The spark role's templates (and the service role's unit template its daemons use), rendered from
the roles' own defaults and vars for a small inventory with the shared RoleRenderer."""

import json
import subprocess

from conftest import RoleRenderer, facts

# A master, a CPU worker and a GPU worker with three GPUs (the nvidia_gpu_facts module's facts);
# every host has 4 vCPUs and 16 GiB (conftest.facts).
GROUPS = {"spark_masters": ["m1"], "spark_workers": ["w1", "g1"], "gpu_workers": ["g1"]}
GPU_FACTS = {"g1": {"ansible_facts": {**facts(), "nvidia_gpu": {"gpus": [{"index": 0}, {"index": 1}, {"index": 2}]}}}}


def spark(groups=None, **extra):
    return RoleRenderer("spark", groups or GROUPS, hostvars=GPU_FACTS, extra={"__spark_auth_secret": "s3cr3t", "__spark_ui_secret": "k3y", **extra})


def render(name, host="m1", groups=None, **extra):
    return spark(groups, **extra).render(name, host)


def properties(text):
    props = {}
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _sep, value = line.strip().partition(" ")
            assert key not in props, f"{key} set twice"
            props[key] = value.strip()
    return props


def test_defaults_secure_and_seed_sized():
    props = properties(render("spark-defaults.conf.j2"))
    assert props["spark.master"] == "spark://m1:7077"
    assert props["spark.authenticate"] == "true"
    assert props["spark.authenticate.secret"] == "s3cr3t"
    assert props["spark.network.crypto.enabled"] == "true"
    assert props["spark.master.rest.enabled"] == "false"
    assert props["spark.worker.cleanup.enabled"] == "true"
    # Sized from the smallest worker's facts (4 vCPUs, 16 GiB): one executor of the worker's 4 cores,
    # its memory 90% of the worker's offer (14848 MiB: 16 GiB less the host's reserve), in 128 MiB steps.
    assert props["spark.executor.cores"] == "4"
    assert props["spark.executor.memory"] == "13312m"
    assert props["spark.eventLog.enabled"] == "true"
    assert props["spark.eventLog.dir"] == props["spark.history.fs.logDirectory"]
    assert props["spark.dynamicAllocation.enabled"] == "true"
    assert props["spark.dynamicAllocation.shuffleTracking.enabled"] == "true"
    assert "spark.dynamicAllocation.maxExecutors" not in props


def test_logs_are_bounded_on_disk():
    props = properties(render("spark-defaults.conf.j2", "w1"))
    assert props["spark.history.fs.cleaner.enabled"] == "true"
    assert props["spark.history.fs.cleaner.maxAge"] == "7d"
    assert props["spark.executor.logs.rolling.strategy"] == "size"
    assert props["spark.executor.logs.rolling.maxSize"] == str(128 * 1024 * 1024)
    assert props["spark.executor.logs.rolling.maxRetainedFiles"] == "5"


def test_no_event_logs_without_a_history_server_to_clean_them():
    props = properties(render("spark-defaults.conf.j2", spark_history_server_enabled=False))
    assert props["spark.eventLog.enabled"] == "false"
    assert not [k for k in props if k.startswith("spark.history.")]


def test_spark_4_standalone_asks_every_ui_for_the_token_and_3_5_and_yarn_cannot():
    spark4 = properties(render("spark-defaults.conf.j2", spark_version="4.0.1"))
    assert spark4["spark.ui.filters"] == "org.apache.spark.ui.JWSFilter"
    assert spark4["spark.org.apache.spark.ui.JWSFilter.param.secretKey"] == "k3y"
    for other in ({}, {"spark_version": "4.0.1", "spark_cluster_manager": "yarn"}):
        props = properties(render("spark-defaults.conf.j2", **other))
        assert not any("JWSFilter" in k or k == "spark.ui.filters" for k in props)
    # On by default exactly where Spark can ask for it (validate.yml refuses it elsewhere).
    assert spark().value("spark_ui_login", "m1") is False
    assert spark(spark_version="4.0.1").value("spark_ui_login", "m1") is True


def test_no_secret_when_authentication_is_off():
    props = properties(render("spark-defaults.conf.j2", spark_authenticate=False))
    assert props["spark.authenticate"] == "false"
    assert not any(k.startswith("spark.authenticate.secret") or k.startswith("spark.network.crypto") for k in props)


def test_bounded_dynamic_allocation_and_extra_properties():
    props = properties(render("spark-defaults.conf.j2", spark_dynamic_allocation_max_executors=12,
                              spark_extra_defaults={"spark.sql.shuffle.partitions": 64}))
    assert props["spark.dynamicAllocation.maxExecutors"] == "12"
    assert props["spark.sql.shuffle.partitions"] == "64"


def test_static_allocation_drops_the_dynamic_settings():
    props = properties(render("spark-defaults.conf.j2", spark_dynamic_allocation_enabled=False))
    assert props["spark.dynamicAllocation.enabled"] == "false"
    assert "spark.dynamicAllocation.shuffleTracking.enabled" not in props


def test_cpu_hosts_offer_no_gpu_and_apps_ask_for_none():
    for host in ("m1", "w1"):
        props = properties(render("spark-defaults.conf.j2", host))
        assert not [k for k in props if ".resource.gpu." in k], host


def test_a_gpu_worker_advertises_its_gpus_through_the_discovery_script():
    props = properties(render("spark-defaults.conf.j2", "g1"))
    assert props["spark.worker.resource.gpu.amount"] == "3"
    assert props["spark.worker.resource.gpu.discoveryScript"] == "/usr/local/lib/sparkfleet/gpu_discovery.sh"
    assert "spark.executor.resource.gpu.amount" not in props


def test_cluster_wide_gpu_amounts_for_applications():
    props = properties(render("spark-defaults.conf.j2", spark_executor_gpu_amount=1, spark_task_gpu_amount=0.25))
    assert props["spark.executor.resource.gpu.amount"] == "1"
    assert props["spark.task.resource.gpu.amount"] == "0.25"


def test_systemd_unit_runs_spark_class_in_the_foreground():
    # The spark role's daemons are data for the shared service role's single unit template.
    unit = RoleRenderer("service", extra={"item": {
        "name": "spark-worker", "description": "worker", "wanted": True, "user": "spark", "group": "spark",
        "exec_start": "/opt/spark/current/bin/spark-class org.apache.spark.deploy.worker.Worker --cores 2 spark://m1:7077",
        "environment": {"SPARK_NO_DAEMONIZE": "true", "SPARK_HOME": "/opt/spark/current"},
        "working_directory": "/var/lib/spark", "success_exit_status": 143, "limit_nofile": 65536}}).render("unit.service.j2")
    lines = unit.splitlines()
    assert "ExecStart=/opt/spark/current/bin/spark-class org.apache.spark.deploy.worker.Worker --cores 2 spark://m1:7077" in lines
    assert "Restart=on-failure" in lines
    assert "User=spark" in lines
    assert "Environment=SPARK_NO_DAEMONIZE=true" in lines
    assert "SuccessExitStatus=143" in lines and "LimitNOFILE=65536" in lines
    assert lines.index("[Install]") > lines.index("[Service]") and "WantedBy=multi-user.target" in lines


def test_a_minimal_unit_has_no_empty_settings():
    unit = RoleRenderer("service", extra={"item": {
        "name": "d", "description": "d", "wanted": True, "exec_start": "/bin/true"}}).render("unit.service.j2")
    assert not [line for line in unit.splitlines() if line.endswith("=")]
    assert "User=" not in unit and "Environment=" not in unit


def test_the_gpu_discovery_script_prints_sparks_resource_format(tmp_path):
    script = tmp_path / "gpu_discovery.sh"
    script.write_text(render("gpu_discovery.sh.j2", "g1"))
    out = subprocess.run(["/bin/sh", str(script)], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == {"name": "gpu", "addresses": ["0", "1", "2"]}
    # The inventory's own list wins over the facts.
    script.write_text(render("gpu_discovery.sh.j2", "g1", spark_gpu_addresses=["1"]))
    out = subprocess.run(["/bin/sh", str(script)], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == {"name": "gpu", "addresses": ["1"]}


RAPIDS = {
    "spark_rapids_enabled": True,
    "spark_rapids_concurrent_gpu_tasks": 2,
    "spark_rapids_pinned_pool_mb": 0,
    "spark_rapids_settings": {},
    "spark_executor_gpu_amount": 1,
    "spark_task_gpu_amount": 0.25,
}


def test_rapids_is_off_by_default():
    props = properties(render("spark-defaults.conf.j2", spark_rapids_enabled=False))
    assert "spark.plugins" not in props
    assert not [k for k in props if k.startswith("spark.rapids.") or k.endswith(".extraClassPath")]


def test_rapids_loads_the_plugin_from_the_installed_jar():
    props = properties(render("spark-defaults.conf.j2", **RAPIDS))
    assert props["spark.plugins"] == "com.nvidia.spark.SQLPlugin"
    # The jar the role installs: Spark 3.5 (the default spark_version) is built for Scala 2.12.
    jar = "/opt/spark/plugins/rapids-4-spark_2.12-25.08.0.jar"
    assert props["spark.driver.extraClassPath"] == jar
    assert props["spark.executor.extraClassPath"] == jar
    spark4 = properties(render("spark-defaults.conf.j2", spark_version="4.0.1", **RAPIDS))
    assert spark4["spark.executor.extraClassPath"] == "/opt/spark/plugins/rapids-4-spark_2.13-25.08.0.jar"
    assert props["spark.rapids.sql.enabled"] == "true"
    assert props["spark.rapids.sql.concurrentGpuTasks"] == "2"
    assert "spark.rapids.memory.pinnedPool.size" not in props
    assert props["spark.executor.resource.gpu.amount"] == "1"
    assert props["spark.task.resource.gpu.amount"] == "0.25"


def test_rapids_pinned_pool_and_extra_settings():
    settings = {"spark.rapids.sql.explain": "NOT_ON_GPU", "spark.rapids.sql.batchSizeBytes": "512m"}
    variables = {**RAPIDS, "spark_rapids_pinned_pool_mb": 2048, "spark_rapids_settings": settings}
    props = properties(render("spark-defaults.conf.j2", **variables))
    assert props["spark.rapids.memory.pinnedPool.size"] == "2048m"
    assert props["spark.rapids.sql.explain"] == "NOT_ON_GPU"
    assert props["spark.rapids.sql.batchSizeBytes"] == "512m"


def test_rolling_restarts_keep_applications_by_default():
    """For rolling restarts: the master keeps its state across a restart, workers decommission gracefully."""
    props = properties(render("spark-defaults.conf.j2"))
    assert props["spark.deploy.recoveryMode"] == "FILESYSTEM"
    assert props["spark.deploy.recoveryDirectory"] == "/var/lib/spark/recovery"
    assert props["spark.decommission.enabled"] == "true"
    assert props["spark.storage.decommission.enabled"] == "true"
    assert props["spark.storage.decommission.shuffleBlocks.enabled"] == "true"
    assert props["spark.storage.decommission.rddBlocks.enabled"] == "true"


def test_several_masters_elect_their_leader_in_zookeeper():
    """Master high availability as Spark documents it (recoveryMode ZOOKEEPER)."""
    groups = {**GROUPS, "spark_masters": ["m1", "m2"], "zookeeper": ["m1", "m2", "w1"]}
    props = properties(render("spark-defaults.conf.j2", groups=groups))
    assert props["spark.master"] == "spark://m1:7077,m2:7077"
    assert props["spark.deploy.recoveryMode"] == "ZOOKEEPER"
    assert props["spark.deploy.zookeeper.url"] == "m1:2181,m2:2181,w1:2181"
    assert props["spark.deploy.zookeeper.dir"] == "/sparkfleet/spark"
    assert "spark.deploy.recoveryDirectory" not in props


def test_rolling_settings_can_be_turned_off_and_need_standalone():
    props = properties(render("spark-defaults.conf.j2", spark_master_recovery_enabled=False, spark_decommission_enabled=False))
    assert not [key for key in props if key.startswith(("spark.deploy.", "spark.decommission.", "spark.storage.decommission."))]
    props = properties(render("spark-defaults.conf.j2", spark_cluster_manager="yarn"))
    assert "spark.deploy.recoveryMode" not in props


def test_ui_reverse_proxy_is_on_by_default_and_can_be_switched_off():
    props = properties(render("spark-defaults.conf.j2"))
    assert props["spark.ui.reverseProxy"] == "true"
    assert props["spark.ui.reverseProxyUrl"] == "/spark"
    props = properties(render("spark-defaults.conf.j2", spark_ui_reverse_proxy_url="https://ui.example.com/spark"))
    assert props["spark.ui.reverseProxyUrl"] == "https://ui.example.com/spark"
    props = properties(render("spark-defaults.conf.j2", spark_ui_reverse_proxy=False))
    assert not [k for k in props if k.startswith("spark.ui.reverseProxy")]


def test_ha_masters_log_in_to_zookeeper_with_a_jaas_file():
    """The masters' daemons name the JAAS file (SPARK_MASTER_OPTS); its Client section carries the password."""
    groups = {**GROUPS, "spark_masters": ["m1", "m2"], "zookeeper": ["m1", "m2", "w1"]}
    renderer = spark(groups, __spark_zookeeper_secret="zk-pw")
    env = renderer.render("spark-env.sh.j2", "m1")
    assert 'export SPARK_MASTER_OPTS="-Djava.security.auth.login.config=/etc/spark/conf/zookeeper-jaas.conf"' in env
    assert "zk-pw" not in env
    assert "SPARK_MASTER_OPTS" not in renderer.render("spark-env.sh.j2", "w1")
    jaas = renderer.render("zookeeper-jaas.conf.j2", "m1")
    client = jaas.split("Client {", 1)[1].split("};", 1)[0]
    assert "org.apache.zookeeper.server.auth.DigestLoginModule required" in client
    assert 'username="sparkfleet"' in client and 'password="zk-pw";' in client
    # One master: no ZooKeeper, no login.
    assert "SPARK_MASTER_OPTS" not in render("spark-env.sh.j2")


def test_sparks_own_metrics_follow_the_monitoring_switch():
    props = properties(render("spark-defaults.conf.j2"))
    assert props["spark.metrics.conf.*.sink.prometheusServlet.class"] == "org.apache.spark.metrics.sink.PrometheusServlet"
    assert props["spark.metrics.conf.*.sink.prometheusServlet.path"] == "/metrics/prometheus"
    assert props["spark.metrics.conf.master.sink.prometheusServlet.path"] == "/metrics/master/prometheus"
    assert props["spark.metrics.conf.applications.sink.prometheusServlet.path"] == "/metrics/applications/prometheus"
    assert props["spark.ui.prometheus.enabled"] == "true"
    for off in ({"monitoring_enabled": False}, {"spark_metrics_enabled": False}):
        props = properties(render("spark-defaults.conf.j2", **off))
        assert not [k for k in props if k.startswith("spark.metrics.") or k == "spark.ui.prometheus.enabled"]
