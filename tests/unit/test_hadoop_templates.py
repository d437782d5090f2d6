"""The hadoop role's configuration, rendered from its own defaults for several inventories and parsed."""

import configparser
import os
import subprocess
import xml.etree.ElementTree as ET

import pytest

from conftest import RoleRenderer

DRC = "org.apache.hadoop.yarn.util.resource.DominantResourceCalculator"
LCE = "org.apache.hadoop.yarn.server.nodemanager.LinuxContainerExecutor"

CPU_ONLY = {"hdfs_namenodes": ["m1"], "yarn_resourcemanagers": ["m1"], "hdfs_datanodes": ["w1", "w2"],
            "yarn_nodemanagers": ["w1", "w2"], "gpu_workers": []}
WITH_GPU = dict(CPU_ONLY, gpu_workers=["g1"], hdfs_datanodes=["w1", "g1"], yarn_nodemanagers=["w1", "g1"])


def xml_properties(text):
    """A Hadoop *-site.xml as a dict; a property set twice fails."""
    props = {}
    for prop in ET.fromstring(text.encode()).findall("property"):
        name, value = prop.findtext("name"), prop.findtext("value")
        assert name not in props, f"{name} set twice"
        props[name] = value
    return props


def ini_sections(text):
    """container-executor.cfg: top-level keys under section '', then [gpu], [cgroups], ..."""
    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str
    parser.read_string("[top]\n" + text)
    return {("" if s == "top" else s): dict(parser[s]) for s in parser.sections()}


def render(groups, template, host, **kwargs):
    return RoleRenderer("hadoop", groups, **kwargs).render(template, host)


@pytest.mark.parametrize("groups", [CPU_ONLY, WITH_GPU], ids=["cpu", "gpu"])
def test_scheduler_is_capacity_with_the_dominant_resource_calculator(groups):
    yarn = xml_properties(render(groups, "yarn-site.xml.j2", "m1"))
    assert yarn["yarn.resourcemanager.scheduler.class"].endswith("capacity.CapacityScheduler")
    capacity = xml_properties(render(groups, "capacity-scheduler.xml.j2", "m1"))
    assert capacity["yarn.scheduler.capacity.resource-calculator"] == DRC
    assert capacity["yarn.scheduler.capacity.root.queues"] == "default"
    assert capacity["yarn.scheduler.capacity.root.default.capacity"] == "100"


@pytest.mark.parametrize("host", ["m1", "w1", "w2"])
def test_every_host_finds_the_namenode_and_resourcemanager_of_the_inventory(host):
    core = xml_properties(render(CPU_ONLY, "core-site.xml.j2", host))
    hdfs = xml_properties(render(CPU_ONLY, "hdfs-site.xml.j2", host))
    yarn = xml_properties(render(CPU_ONLY, "yarn-site.xml.j2", host))
    assert core["fs.defaultFS"] == "hdfs://m1:8020"
    assert hdfs["dfs.namenode.rpc-address"] == "m1:8020"
    assert yarn["yarn.resourcemanager.hostname"] == "m1"
    assert yarn["yarn.resourcemanager.address"] == "m1:8032"
    assert yarn["yarn.resourcemanager.scheduler.address"] == "m1:8030"
    assert yarn["yarn.resourcemanager.resource-tracker.address"] == "m1:8031"
    # Each host advertises its own inventory name.
    assert yarn["yarn.nodemanager.address"] == f"{host}:8041"
    assert hdfs["dfs.datanode.hostname"] == host
    # RPC and data transfer bind to the address the inventory name resolves to (the private interface).
    assert hdfs["dfs.datanode.address"] == f"{host}:9866"
    assert hdfs["dfs.datanode.ipc.address"] == f"{host}:9867"
    assert hdfs["dfs.replication"] == "2"


def test_ports_and_hosts_follow_the_variables():
    renderer = RoleRenderer("hadoop", dict(CPU_ONLY, hdfs_namenodes=["nn"], yarn_resourcemanagers=["rm"]),
                            extra={"hadoop_namenode_rpc_port": 9000, "hadoop_resourcemanager_port": 18032})
    core = xml_properties(renderer.render("core-site.xml.j2", "w1"))
    yarn = xml_properties(renderer.render("yarn-site.xml.j2", "w1"))
    assert core["fs.defaultFS"] == "hdfs://nn:9000"
    assert yarn["yarn.resourcemanager.address"] == "rm:18032"


def test_web_uis_listen_on_loopback_only():
    hdfs = xml_properties(render(CPU_ONLY, "hdfs-site.xml.j2", "m1"))
    yarn = xml_properties(render(CPU_ONLY, "yarn-site.xml.j2", "m1"))
    core = xml_properties(render(CPU_ONLY, "core-site.xml.j2", "m1"))
    assert hdfs["dfs.namenode.http-address"] == "127.0.0.1:9870"
    assert hdfs["dfs.datanode.http.address"] == "127.0.0.1:9864"
    assert hdfs["dfs.namenode.secondary.http-address"] == "127.0.0.1:9868"
    assert yarn["yarn.resourcemanager.webapp.address"] == "127.0.0.1:8088"
    assert yarn["yarn.nodemanager.webapp.address"] == "127.0.0.1:8042"
    assert core["hadoop.http.authentication.simple.anonymous.allowed"] == "false"
    assert hdfs["dfs.webhdfs.enabled"] == "false"


def test_the_namespace_is_kept_twice_and_checkpointed():
    hdfs = xml_properties(render(CPU_ONLY, "hdfs-site.xml.j2", "m1", extra={"hadoop_checkpoint_period_seconds": 600}))
    assert hdfs["dfs.namenode.name.dir"] == "file:///var/lib/hadoop/hdfs/namenode,file:///var/lib/hadoop/hdfs/namenode-copy"
    assert hdfs["dfs.namenode.checkpoint.dir"] == "file:///var/lib/hadoop/hdfs/checkpoint"
    assert hdfs["dfs.namenode.checkpoint.period"] == "600"


GPU_PROPS = ("yarn.nodemanager.resource-plugins", "yarn.nodemanager.container-executor.class",
             "yarn.nodemanager.linux-container-executor.resources-handler.class")


def test_gpu_nodemanager_gets_the_gpu_plugin_and_linux_container_executor():
    renderer = RoleRenderer("hadoop", WITH_GPU)
    yarn = xml_properties(renderer.render("yarn-site.xml.j2", "g1"))
    assert yarn["yarn.nodemanager.resource-plugins"] == "yarn.io/gpu"
    assert yarn["yarn.nodemanager.resource-plugins.gpu.allowed-gpu-devices"] == "auto"
    assert yarn["yarn.nodemanager.resource-plugins.gpu.path-to-discovery-executables"] == "/usr/bin"
    assert yarn["yarn.nodemanager.container-executor.class"] == LCE
    assert yarn["yarn.nodemanager.linux-container-executor.group"] == "hadoop"
    assert yarn["yarn.nodemanager.linux-container-executor.resources-handler.class"].endswith("CgroupsLCEResourcesHandler")
    assert yarn["yarn.nodemanager.linux-container-executor.cgroups.hierarchy"] == "/hadoop-yarn"
    assert yarn["yarn.nodemanager.linux-container-executor.path"] == "/opt/hadoop/releases/hadoop-3.4.1/bin/container-executor"
    types = xml_properties(renderer.render("resource-types.xml.j2", "g1"))
    assert types == {"yarn.resource-types": "yarn.io/gpu"}
    cfg = ini_sections(renderer.render("container-executor.cfg.j2", "g1"))
    assert cfg["gpu"] == {"module.enabled": "true"}
    assert cfg[""]["yarn.nodemanager.linux-container-executor.group"] == "hadoop"
    assert "yarn" in cfg[""]["banned.users"].split(",") and "root" in cfg[""]["banned.users"].split(",")
    assert cfg["cgroups"] == {"root": "/sys/fs/cgroup", "yarn-hierarchy": "hadoop-yarn"}


@pytest.mark.parametrize("groups, host", [(WITH_GPU, "w1"), (WITH_GPU, "m1"), (CPU_ONLY, "w1")],
                         ids=["cpu-nm-beside-gpu", "resourcemanager", "cpu-only-cluster"])
def test_no_gpu_plugin_off_gpu_nodemanagers(groups, host):
    yarn = xml_properties(render(groups, "yarn-site.xml.j2", host))
    assert not [p for p in GPU_PROPS if p in yarn]
    assert not [p for p in yarn if "gpu" in p]


def test_yarn_io_gpu_is_declared_where_it_is_scheduled():
    gpu, cpu = RoleRenderer("hadoop", WITH_GPU), RoleRenderer("hadoop", CPU_ONLY)
    # The ResourceManager must know the type to schedule it, and the GPU NodeManager reports it.
    assert gpu.value("__hadoop_declares_gpu_type", "m1") is True
    assert gpu.value("__hadoop_declares_gpu_type", "g1") is True
    assert gpu.value("__hadoop_declares_gpu_type", "w1") is False
    # Without GPUs it still knows the type, so that a request for one is refused, not ignored.
    assert cpu.value("__hadoop_declares_gpu_type", "m1") is True
    assert cpu.value("__hadoop_declares_gpu_type", "w1") is False
    off = RoleRenderer("hadoop", WITH_GPU, extra={"hadoop_yarn_gpu_enabled": False})
    assert off.value("__hadoop_declares_gpu_type", "m1") is False
    assert "yarn.nodemanager.resource-plugins" not in xml_properties(off.render("yarn-site.xml.j2", "g1"))


def test_nodemanagers_are_sized_like_spark_workers_and_containers_fit_the_smallest():
    renderer = RoleRenderer("hadoop", CPU_ONLY, hostvars={"w2": {"spark_worker_memory_mb": 3072, "spark_worker_cores": 2}})
    w1 = xml_properties(renderer.render("yarn-site.xml.j2", "w1"))
    w2 = xml_properties(renderer.render("yarn-site.xml.j2", "w2"))
    rm = xml_properties(renderer.render("yarn-site.xml.j2", "m1"))
    # 4 vCPUs, 16 GiB less the 10% reserve (1536 MiB rounded to 256): the spark role's sizing.
    assert (w1["yarn.nodemanager.resource.cpu-vcores"], w1["yarn.nodemanager.resource.memory-mb"]) == ("4", "14848")
    assert (w2["yarn.nodemanager.resource.cpu-vcores"], w2["yarn.nodemanager.resource.memory-mb"]) == ("2", "3072")
    assert rm["yarn.scheduler.maximum-allocation-mb"] == "3072"
    assert rm["yarn.scheduler.maximum-allocation-vcores"] == "2"
    assert rm["yarn.scheduler.minimum-allocation-mb"] == "512"


def test_extra_properties_override_and_mapreduce_runs_on_yarn():
    renderer = RoleRenderer("hadoop", CPU_ONLY, extra={"hadoop_extra_properties": {
        "yarn-site": {"yarn.resourcemanager.am.max-attempts": 4}, "capacity-scheduler": {
            "yarn.scheduler.capacity.maximum-am-resource-percent": 0.2}}})
    assert xml_properties(renderer.render("yarn-site.xml.j2", "m1"))["yarn.resourcemanager.am.max-attempts"] == "4"
    capacity = xml_properties(renderer.render("capacity-scheduler.xml.j2", "m1"))
    assert capacity["yarn.scheduler.capacity.maximum-am-resource-percent"] == "0.2"
    assert capacity["yarn.scheduler.capacity.resource-calculator"] == DRC
    assert xml_properties(renderer.render("mapred-site.xml.j2", "m1"))["mapreduce.framework.name"] == "yarn"


def test_daemons_run_in_the_foreground_as_their_users():
    renderer = RoleRenderer("hadoop", WITH_GPU)
    units = {u["name"]: u for u in renderer.value("__hadoop_units", "m1")}
    assert set(units) == {"hadoop-hdfs-namenode", "hadoop-hdfs-secondarynamenode", "hadoop-hdfs-datanode",
                          "hadoop-yarn-resourcemanager", "hadoop-yarn-nodemanager"}
    assert units["hadoop-hdfs-namenode"]["exec_start"] == "/opt/hadoop/bin/hdfs namenode"
    assert units["hadoop-yarn-nodemanager"]["exec_start"] == "/opt/hadoop/bin/yarn nodemanager"
    assert units["hadoop-hdfs-namenode"]["user"] == "hdfs"
    assert units["hadoop-yarn-nodemanager"]["user"] == "yarn"
    assert renderer.value("__hadoop_host_services", "m1") == ["hadoop-hdfs-namenode", "hadoop-hdfs-secondarynamenode",
                                                              "hadoop-yarn-resourcemanager"]
    assert renderer.value("__hadoop_host_services", "g1") == ["hadoop-hdfs-datanode", "hadoop-yarn-nodemanager"]


def test_hadoop_is_enabled_by_the_cluster_manager():
    assert RoleRenderer("hadoop", CPU_ONLY).value("hadoop_enabled", "m1") is False
    assert RoleRenderer("hadoop", CPU_ONLY, extra={"spark_cluster_manager": "yarn"}).value("hadoop_enabled", "m1") is True


@pytest.fixture(name="launcher")
def fixture_launcher(tmp_path):
    """The rendered launcher and hadoop-env.sh, with a java that prints what it was started with."""
    conf, bin_dir, java = tmp_path / "conf", tmp_path / "bin", tmp_path / "jdk" / "bin" / "java"
    for directory in (conf, bin_dir, java.parent):
        directory.mkdir(parents=True)
    java.write_text('#!/bin/sh\nfor a in "$@"; do echo "$a"; done\n')
    java.chmod(0o755)
    renderer = RoleRenderer("hadoop", CPU_ONLY, extra={
        "hadoop_conf_dir": str(conf), "java_home": str(java.parent.parent), "hadoop_daemon_memory_mb": 700})
    (conf / "hadoop-env.sh").write_text(renderer.render("hadoop-env.sh.j2", "m1"))
    (bin_dir / "hadoop").write_text(renderer.render("hadoop.sh.j2", "m1"))
    (bin_dir / "hadoop").chmod(0o755)
    for tool in ("hdfs", "yarn"):
        os.symlink("hadoop", bin_dir / tool)

    def run(*argv):
        env = {"PATH": "/usr/bin:/bin"}
        done = subprocess.run([str(bin_dir / argv[0]), *argv[1:]], env=env, capture_output=True, text=True, check=False)
        return done.returncode, done.stdout.splitlines(), done.stderr
    return run


def test_the_launcher_starts_daemons_with_their_class_heap_and_the_release_classpath(launcher):
    rc, args, err = launcher("hdfs", "namenode")
    assert rc == 0, err
    assert args[-1] == "org.apache.hadoop.hdfs.server.namenode.NameNode"
    assert "-Xmx700m" in args and "--add-opens=java.base/java.lang=ALL-UNNAMED" in args
    classpath = args[args.index("-cp") + 1].split(":")
    assert classpath[1:4] == ["/opt/hadoop/current/share/hadoop/common/lib/*", "/opt/hadoop/current/share/hadoop/common/*",
                              "/opt/hadoop/current/share/hadoop/hdfs"]
    assert "/opt/hadoop/current/share/hadoop/yarn/*" in classpath
    rc, args, err = launcher("yarn", "nodemanager")
    assert (rc, args[-1]) == (0, "org.apache.hadoop.yarn.server.nodemanager.NodeManager"), err


def test_the_launcher_runs_clients_with_their_arguments_and_refuses_the_rest(launcher):
    rc, args, err = launcher("hdfs", "dfs", "-cat", "/a b")
    assert rc == 0 and "-Xmx256m" in args, err
    assert args[-3:] == ["org.apache.hadoop.fs.FsShell", "-cat", "/a b"]
    # Apache's yarn script hands ApplicationCLI its subcommand.
    rc, args, err = launcher("yarn", "application", "-status", "application_1_1")
    assert rc == 0, err
    assert args[-4:] == ["org.apache.hadoop.yarn.client.cli.ApplicationCLI", "application", "-status", "application_1_1"]
    rc, args, err = launcher("hdfs", "balancer")
    assert rc == 64 and args == [] and "not a command here: hdfs balancer" in err


def test_livy_may_act_for_its_accounts_only_when_livy_runs():
    # Off (CI's hadoop scenario): core-site.xml has exactly the properties it has without Livy.
    off = xml_properties(render(CPU_ONLY, "core-site.xml.j2", "m1"))
    assert set(off) == {"fs.defaultFS", "hadoop.tmp.dir", "hadoop.http.staticuser.user",
                        "hadoop.http.authentication.simple.anonymous.allowed"}
    groups = dict(CPU_ONLY, livy=["m1"], notebook=["nb1"])
    on = xml_properties(render(groups, "core-site.xml.j2", "w1", hostvars={"nb1": {"notebook_host_users": ["alice"]}},
                               extra={"livy_enabled": True}))
    assert {k: v for k, v in on.items() if k not in off} == {
        "hadoop.proxyuser.livy.hosts": "m1", "hadoop.proxyuser.livy.users": "alice,jupyter"}
