"""The mesos role's daemons and ZooKeeper ensemble, rendered from its own defaults."""

from conftest import RoleRenderer

SINGLE = {"mesos_masters": ["m1"], "mesos_agents": ["w1", "w2"]}
HA = {"mesos_masters": ["m1", "m2", "m3"], "mesos_agents": ["w1"]}
TARBALL = {"mesos_tarball_url": "https://artifacts.example/mesos-1.11.0-debian12.tar.gz", "mesos_checksum": "sha256:" + "0" * 64}


def units(groups, host, **extra):
    renderer = RoleRenderer("mesos", groups, extra=dict(TARBALL, **extra))
    return {u["name"]: u for u in renderer.value("__mesos_units", host)}, renderer


def test_single_master_without_zookeeper():
    found, renderer = units(SINGLE, "m1")
    master = found["mesos-master"]["exec_start"].split()
    assert master[0] == "/opt/mesos/current/sbin/mesos-master"
    assert "--port=5050" in master and "--hostname=m1" in master
    assert not [a for a in master if a.startswith(("--zk", "--quorum"))]
    assert "--authenticate_frameworks" in master and "--credentials=/etc/mesos/credentials.json" in master
    assert found["mesos-master"]["wanted"] is True and found["mesos-agent"]["wanted"] is False
    agent = units(SINGLE, "w1")[0]["mesos-agent"]
    assert "--master=m1:5050" in agent["exec_start"].split()
    assert "--credential=/etc/mesos/agent-credential.json" in agent["exec_start"].split()
    assert agent["environment"] == {"LD_LIBRARY_PATH": "/opt/mesos/current/lib"}
    assert renderer.value("__mesos_release_dir", "m1") == "/opt/mesos/releases/mesos-1.11.0-debian12"


def test_ha_masters_elect_through_zookeeper():
    found, renderer = units(HA, "m2", mesos_zookeeper_enabled=True)
    master = found["mesos-master"]["exec_start"].split()
    assert "--zk=zk://m1:2181,m2:2181,m3:2181/mesos" in master and "--quorum=2" in master
    agent = units(HA, "w1", mesos_zookeeper_enabled=True)[0]["mesos-agent"]["exec_start"].split()
    assert "--master=zk://m1:2181,m2:2181,m3:2181/mesos" in agent
    zoo = dict(line.split("=", 1) for line in renderer.render("zoo.cfg.j2", "m2").splitlines() if "=" in line)
    assert zoo["server.1"] == "m1:2888:3888" and zoo["server.3"] == "m3:2888:3888" and zoo["clientPort"] == "2181"


def test_a_package_installs_under_usr():
    renderer = RoleRenderer("mesos", SINGLE, extra={"mesos_package_url": "https://artifacts.example/mesos_1.11.0_amd64.deb",
                                                    "mesos_checksum": "sha256:" + "0" * 64})
    found = {u["name"]: u for u in renderer.value("__mesos_units", "w1")}
    assert found["mesos-agent"]["exec_start"].startswith("/usr/sbin/mesos-agent ")
    assert found["mesos-agent"]["environment"] == {}


def test_mesos_is_enabled_by_the_cluster_manager():
    assert RoleRenderer("mesos", SINGLE).value("mesos_enabled", "m1") is False
    assert RoleRenderer("mesos", SINGLE, extra={"spark_cluster_manager": "mesos"}).value("mesos_enabled", "m1") is True
