"""The zookeeper role's zoo.cfg, JAAS file and unit, rendered from the role's own defaults and vars
with the shared RoleRenderer: clients and peers log in, the client port is on one address."""

from conftest import RoleRenderer, facts

ADDRESSES = {"z1": "10.0.0.1", "z2": "10.0.0.2", "z3": "10.0.0.3"}
SECRETS = {"__zookeeper_client_secret": "cl1ent", "__zookeeper_quorum_secret": "qu0rum"}


def zookeeper(servers=("z1", "z2", "z3"), **extra):
    hostvars = {h: {"ansible_facts": facts(address=a)} for h, a in ADDRESSES.items()}
    return RoleRenderer("zookeeper", {"zookeeper": list(servers)}, hostvars=hostvars, extra={**SECRETS, **extra})


def config(text):
    pairs = [line.split("=", 1) for line in text.splitlines() if line.strip() and not line.startswith("#")]
    keys = [key for key, _value in pairs]
    assert len(keys) == len(set(keys)), "a key set twice"
    return dict(pairs)


def test_clients_must_log_in_on_the_hosts_private_address():
    cfg = config(zookeeper().render("zoo.cfg.j2", "z2"))
    assert cfg["clientPortAddress"] == "10.0.0.2"
    assert cfg["clientPort"] == "2181"
    assert cfg["authProvider.sasl"] == "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"
    assert cfg["enforce.auth.enabled"] == "true"
    assert cfg["enforce.auth.schemes"] == "sasl"
    # srvr, the health check's command, needs no session.
    assert cfg["4lw.commands.whitelist"] == "ruok,srvr,mntr"


def test_sparkfleet_address_wins_over_the_default_interface():
    cfg = config(zookeeper(sparkfleet_address="192.168.7.2").render("zoo.cfg.j2", "z2"))
    assert cfg["clientPortAddress"] == "192.168.7.2"


def test_an_ensemble_authenticates_its_peers_on_their_own_addresses():
    cfg = config(zookeeper().render("zoo.cfg.j2", "z1"))
    assert cfg["quorum.auth.enableSasl"] == "true"
    assert cfg["quorum.auth.learnerRequireSasl"] == "true"
    assert cfg["quorum.auth.serverRequireSasl"] == "true"
    assert [cfg[f"server.{i}"] for i in (1, 2, 3)] == ["z1:2888:3888", "z2:2888:3888", "z3:2888:3888"]
    assert "quorumListenOnAllIPs" not in cfg
    # The upgrade step: log in, accept a peer that does not yet.
    cfg = config(zookeeper(zookeeper_quorum_auth_required=False).render("zoo.cfg.j2", "z1"))
    assert cfg["quorum.auth.enableSasl"] == "true"
    assert cfg["quorum.auth.learnerRequireSasl"] == "false"
    assert cfg["quorum.auth.serverRequireSasl"] == "false"


def test_one_server_has_no_peers_to_authenticate():
    renderer = zookeeper(servers=["z1"], __zookeeper_quorum_secret=None)
    cfg = config(renderer.render("zoo.cfg.j2", "z1"))
    assert not [key for key in cfg if key.startswith(("quorum.", "server."))]
    assert cfg["enforce.auth.enabled"] == "true"
    jaas = renderer.render("jaas.conf.j2", "z1")
    assert "Quorum" not in jaas


def test_mesos_clients_cannot_log_in_so_nothing_is_enforced():
    cfg = config(zookeeper(spark_cluster_manager="mesos").render("zoo.cfg.j2", "z1"))
    assert "enforce.auth.enabled" not in cfg
    assert cfg["authProvider.sasl"].endswith("SASLAuthenticationProvider")


def test_the_jaas_file_holds_the_accounts():
    jaas = zookeeper().render("jaas.conf.j2", "z1")
    server = jaas.split("Server {", 1)[1].split("};", 1)[0]
    assert "org.apache.zookeeper.server.auth.DigestLoginModule required" in server
    assert 'user_sparkfleet="cl1ent";' in server
    assert 'user_zookeeper="qu0rum";' in jaas.split("QuorumServer {", 1)[1].split("};", 1)[0]
    learner = jaas.split("QuorumLearner {", 1)[1].split("};", 1)[0]
    assert 'username="zookeeper"' in learner and 'password="qu0rum";' in learner


def test_the_command_line_names_the_jaas_file_not_its_passwords():
    renderer = zookeeper()
    exec_start = renderer.value("__zookeeper_units", "z1")[0]["exec_start"]
    assert "-Djava.security.auth.login.config=/etc/zookeeper/conf/jaas.conf" in exec_start
    assert "cl1ent" not in exec_start and "qu0rum" not in exec_start
