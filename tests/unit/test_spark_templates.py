"""The spark role's templates, rendered with Ansible's own templating."""

import pathlib

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

ROOT = pathlib.Path(__file__).resolve().parents[2]
TEMPLATES = ROOT / "roles" / "spark" / "templates"

BASE = {
    "ansible_managed": "Ansible managed",
    "__spark_master_url": "spark://m1:7077",
    "spark_driver_memory_mb": 1024,
    "spark_executor_cores": 4,
    "spark_executor_memory_mb": 18432,
    "spark_dynamic_allocation_enabled": True,
    "spark_dynamic_allocation_min_executors": 0,
    "spark_dynamic_allocation_max_executors": 0,
    "spark_event_log_dir": "file:///var/lib/spark/events",
    "spark_history_webui_port": 18080,
    "spark_master_rest_enabled": False,
    "spark_worker_cleanup_enabled": True,
    "spark_worker_cleanup_app_data_ttl": 604800,
    "spark_authenticate": True,
    "__spark_auth_secret": "s3cr3t",
    "spark_network_crypto_enabled": True,
    "spark_extra_defaults": {},
    "spark_jvm_options": [],
    "spark_executor_gpu_amount": 0,
    "spark_task_gpu_amount": 0,
    "__spark_is_gpu_worker": False,
    "spark_gpu_addresses": [],
    "__spark_gpu_discovery_script": "/usr/local/lib/sparkfleet/gpu_discovery.sh",
    "spark_cluster_manager": "standalone",
    "spark_master_recovery_enabled": True,
    "__spark_recovery_dir": "/var/lib/spark/recovery",
    "__spark_master_ha": False,
    "spark_decommission_enabled": True,
    "spark_ui_reverse_proxy": True,
    "spark_ui_reverse_proxy_url": "/spark",
}


def render(name, **overrides):
    variables = dict(BASE, **overrides)
    templar = Templar(loader=DataLoader(), variables=variables)
    return templar.template(trust_as_template((TEMPLATES / name).read_text()))


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
    assert props["spark.executor.cores"] == "4"
    assert props["spark.executor.memory"] == "18432m"
    assert props["spark.eventLog.enabled"] == "true"
    assert props["spark.eventLog.dir"] == props["spark.history.fs.logDirectory"]
    assert props["spark.dynamicAllocation.enabled"] == "true"
    assert props["spark.dynamicAllocation.shuffleTracking.enabled"] == "true"
    assert "spark.dynamicAllocation.maxExecutors" not in props


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
    props = properties(render("spark-defaults.conf.j2"))
    assert not [k for k in props if ".resource.gpu." in k]


def test_a_gpu_worker_advertises_its_gpus_through_the_discovery_script():
    props = properties(render("spark-defaults.conf.j2", __spark_is_gpu_worker=True, spark_gpu_addresses=["0", "1", "2"]))
    assert props["spark.worker.resource.gpu.amount"] == "3"
    assert props["spark.worker.resource.gpu.discoveryScript"] == "/usr/local/lib/sparkfleet/gpu_discovery.sh"
    assert "spark.executor.resource.gpu.amount" not in props


def test_cluster_wide_gpu_amounts_for_applications():
    props = properties(render("spark-defaults.conf.j2", spark_executor_gpu_amount=1, spark_task_gpu_amount=0.25))
    assert props["spark.executor.resource.gpu.amount"] == "1"
    assert props["spark.task.resource.gpu.amount"] == "0.25"


def test_systemd_unit_runs_spark_class_in_the_foreground():
    # The spark role's daemons are data for the shared service role's single unit template.
    templar = Templar(loader=DataLoader(), variables={"ansible_managed": "Ansible managed", "item": {
        "name": "spark-worker", "description": "worker", "wanted": True, "user": "spark", "group": "spark",
        "exec_start": "/opt/spark/current/bin/spark-class org.apache.spark.deploy.worker.Worker --cores 2 spark://m1:7077",
        "environment": {"SPARK_NO_DAEMONIZE": "true", "SPARK_HOME": "/opt/spark/current"},
        "working_directory": "/var/lib/spark", "success_exit_status": 143, "limit_nofile": 65536}})
    unit = templar.template(trust_as_template((ROOT / "roles" / "service" / "templates" / "unit.service.j2").read_text()))
    lines = unit.splitlines()
    assert "ExecStart=/opt/spark/current/bin/spark-class org.apache.spark.deploy.worker.Worker --cores 2 spark://m1:7077" in lines
    assert "Restart=on-failure" in lines
    assert "User=spark" in lines
    assert "Environment=SPARK_NO_DAEMONIZE=true" in lines
    assert "SuccessExitStatus=143" in lines and "LimitNOFILE=65536" in lines
    assert lines.index("[Install]") > lines.index("[Service]") and "WantedBy=multi-user.target" in lines


def test_a_minimal_unit_has_no_empty_settings():
    templar = Templar(loader=DataLoader(), variables={"ansible_managed": "x", "item": {
        "name": "d", "description": "d", "wanted": True, "exec_start": "/bin/true"}})
    unit = templar.template(trust_as_template((ROOT / "roles" / "service" / "templates" / "unit.service.j2").read_text()))
    assert not [line for line in unit.splitlines() if line.endswith("=")]
    assert "User=" not in unit and "Environment=" not in unit


def test_the_gpu_discovery_script_prints_sparks_resource_format(tmp_path):
    import json
    import subprocess
    from conftest import load_plugin
    shares = load_plugin("filter", "gpu_shares")
    templar = Templar(loader=DataLoader(), variables={"ansible_managed": "x", "spark_gpu_addresses": ["0", "1"]})
    templar.environment.filters["sparkfleet.cluster.spark_gpu_discovery"] = shares.spark_gpu_discovery
    script = tmp_path / "gpu_discovery.sh"
    script.write_text(templar.template(trust_as_template((TEMPLATES / "gpu_discovery.sh.j2").read_text())))
    out = subprocess.run(["/bin/sh", str(script)], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == {"name": "gpu", "addresses": ["0", "1"]}


RAPIDS = {
    "spark_rapids_enabled": True,
    "__spark_rapids_jar": "/opt/spark/plugins/rapids-4-spark_2.13-25.08.0.jar",
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
    assert props["spark.driver.extraClassPath"] == RAPIDS["__spark_rapids_jar"]
    assert props["spark.executor.extraClassPath"] == RAPIDS["__spark_rapids_jar"]
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
    """Issue 11: the master keeps its state across a restart, workers decommission gracefully."""
    props = properties(render("spark-defaults.conf.j2"))
    assert props["spark.deploy.recoveryMode"] == "FILESYSTEM"
    assert props["spark.deploy.recoveryDirectory"] == "/var/lib/spark/recovery"
    assert props["spark.decommission.enabled"] == "true"
    assert props["spark.storage.decommission.enabled"] == "true"
    assert props["spark.storage.decommission.shuffleBlocks.enabled"] == "true"
    assert props["spark.storage.decommission.rddBlocks.enabled"] == "true"


def test_several_masters_elect_their_leader_in_zookeeper():
    """Issue 11: master high availability as Spark documents it (recoveryMode ZOOKEEPER)."""
    props = properties(render("spark-defaults.conf.j2", __spark_master_ha=True,
                              __spark_master_url="spark://m1:7077,m2:7077",
                              __spark_zookeeper_url="m1:2181,m2:2181,w1:2181", spark_zookeeper_dir="/sparkfleet/spark"))
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
    assert not [k for k in props if k.startswith("spark.ui.")]
