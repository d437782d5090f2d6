"""The mesos role's daemons, rendered from its own defaults and the cluster-wide ZooKeeper ensemble."""

import yaml

from conftest import ROOT, RoleRenderer

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


def test_ha_masters_elect_through_the_zookeeper_group():
    """Several masters: ZooKeeper on by default, the zookeeper role's ensemble and client port."""
    groups = dict(HA, zookeeper=["z1", "z2", "z3"])
    found, renderer = units(groups, "m2", spark_cluster_manager="mesos")
    master = found["mesos-master"]["exec_start"].split()
    # The URL with the masters' credentials is read from a root-only file, never argv.
    assert "--zk=file:///etc/mesos/zk" in master and "--quorum=2" in master
    assert renderer.value("mesos_zookeeper_url", "m2") == "zk://z1:2181,z2:2181,z3:2181/mesos"
    agent = units(groups, "w1")[0]["mesos-agent"]["exec_start"].split()
    assert "--master=zk://z1:2181,z2:2181,z3:2181/mesos" in agent
    # ZooKeeper's ports are the zookeeper role's to check, not this role's.
    assert renderer.value("__mesos_host_ports", "m2") == {"mesos_master_port": 5050}
    moved = units(groups, "m1", zookeeper_client_port=2281, zookeeper_servers=["m1", "m2", "m3"])[1]
    assert moved.value("mesos_zookeeper_url", "m1") == "zk://m1:2281,m2:2281,m3:2281/mesos"


def test_one_master_uses_zookeeper_when_asked():
    groups = dict(SINGLE, zookeeper=["m1"])
    assert not [a for a in units(groups, "m1")[0]["mesos-master"]["exec_start"].split() if a.startswith("--zk")]
    found, renderer = units(groups, "m1", mesos_zookeeper_enabled=True)
    assert "--zk=file:///etc/mesos/zk" in found["mesos-master"]["exec_start"].split()
    assert "--quorum=1" in found["mesos-master"]["exec_start"].split()
    assert renderer.value("__mesos_master_url", "w1") == "zk://m1:2181/mesos"


def test_ha_masters_without_zookeeper_servers_get_no_url():
    """validate.yml refuses this (mesos_zookeeper_enabled with an empty mesos_zookeeper_url)."""
    renderer = RoleRenderer("mesos", HA, extra=TARBALL)
    assert renderer.value("mesos_zookeeper_enabled", "m1") is True
    assert renderer.value("mesos_zookeeper_url", "m1") == ""


def test_a_package_installs_under_usr():
    renderer = RoleRenderer("mesos", SINGLE, extra={"mesos_package_url": "https://artifacts.example/mesos_1.11.0_amd64.deb",
                                                    "mesos_checksum": "sha256:" + "0" * 64})
    found = {u["name"]: u for u in renderer.value("__mesos_units", "w1")}
    assert found["mesos-agent"]["exec_start"].startswith("/usr/sbin/mesos-agent ")
    assert found["mesos-agent"]["environment"] == {}


def test_mesos_is_enabled_by_the_cluster_manager():
    assert RoleRenderer("mesos", SINGLE).value("mesos_enabled", "m1") is False
    assert RoleRenderer("mesos", SINGLE, extra={"spark_cluster_manager": "mesos"}).value("mesos_enabled", "m1") is True


def test_http_endpoints_need_the_login_and_root_runs_no_task():
    found, renderer = units(SINGLE, "m1")
    master = found["mesos-master"]["exec_start"].split()
    agent = units(SINGLE, "w1")[0]["mesos-agent"]["exec_start"].split()
    for argv in (master, agent):
        assert "--authenticate_http_readonly" in argv and "--authenticate_http_readwrite" in argv
        assert "--http_credentials=/etc/mesos/http-credentials.json" in argv
    assert "--acls=/etc/mesos/acls.json" in master
    assert renderer.value("__mesos_acls", "m1") == {
        "permissive": True, "run_tasks": [{"principals": {"type": "NONE"}, "users": {"values": ["root"]}}]}
    # Without authentication there is no login to ask for; without forbidden users, no ACLs.
    plain = units(SINGLE, "m1", mesos_authenticate=False, mesos_forbidden_task_users=[])[0]["mesos-master"]["exec_start"]
    assert "--authenticate_http" not in plain and "--acls" not in plain


def test_the_masters_zookeeper_file_carries_their_digest_credentials():
    """/etc/mesos/zk (--zk=file://): Mesos's zk://user:password@hosts/path, the password never in argv."""
    tasks = yaml.safe_load((ROOT / "roles" / "mesos" / "tasks" / "configure.yml").read_text())
    write = next(t for t in tasks if t.get("register") == "__mesos_zk_url_file")
    assert write["no_log"] is True and write["ansible.builtin.copy"]["mode"] == "0600"
    groups = dict(HA, zookeeper=["z1", "z2", "z3"])
    renderer = units(groups, "m1", spark_cluster_manager="mesos", __mesos_zookeeper_secret="zkpw")[1]
    content = renderer.string(write["ansible.builtin.copy"]["content"], "m1").strip()
    assert content == "zk://mesos:zkpw@z1:2181,z2:2181,z3:2181/mesos"
    assert "zkpw" not in " ".join(u["exec_start"] for u in renderer.value("__mesos_units", "m1"))
