"""Spark Connect (spark role) and the thin master's notebook host, rendered from the roles' own defaults."""

import json
import re
import shlex

import pytest
import yaml

from conftest import ROOT, RoleRenderer, facts

CLUSTER = {"spark_masters": ["m1"], "spark_workers": ["w1"], "notebook": ["nb1"]}
MASTER_FACTS = {"m1": {"ansible_facts": {**facts(), "default_ipv4": {"address": "10.1.2.3"}}}}
TLS = {"__spark_connect_tls": {"certificate": "/etc/ssl/sparkfleet/spark-connect.crt",
                               "key": "/etc/ssl/sparkfleet/spark-connect.key"}}


def spark(**extra):
    return RoleRenderer("spark", CLUSTER, hostvars=MASTER_FACTS,
                        extra={"spark_connect_enabled": True, "spark_version": "4.0.1", **TLS, **extra})


def connect_unit(renderer, host="m1"):
    units = {u["name"]: u for u in renderer.value("__spark_units", host)}
    return units["spark-connect"]


def test_the_endpoint_is_tls_with_http2_and_asks_who_calls_before_the_loopback_server():
    site = spark().render("nginx-spark-connect.conf.j2", "m1")
    assert "listen 10.1.2.3:15002 ssl http2;" in site
    assert "ssl_certificate     /etc/ssl/sparkfleet/spark-connect.crt;" in site
    assert "ssl_certificate_key /etc/ssl/sparkfleet/spark-connect.key;" in site
    # Every call is checked first (auth_request), the verified name replaces the client's header of
    # that name, and the server's own token comes from a root-only include, before the upstream.
    assert re.search(
        r"location / \{\s*auth_request /_sparkfleet_connect_auth;\s*"
        r"auth_request_set \$sparkfleet_user \$upstream_http_x_sparkfleet_user;\s*"
        r"grpc_set_header x-sparkfleet-user \$sparkfleet_user;\s*"
        r"include /etc/spark/connect/server-auth.conf;\s*grpc_pass grpc://127.0.0.1:15012;", site)
    # The check's location is internal (not reachable from outside) and goes to loopback only.
    assert re.search(r"location = /_sparkfleet_connect_auth \{\s*internal;\s*proxy_pass http://127.0.0.1:15013/verify;", site)
    # No plain-text listener, no other upstream.
    assert site.count("listen ") == 1
    assert site.count("grpc_pass ") == 1 and site.count("proxy_pass ") == 1


def test_the_caller_check_runs_beside_the_server_and_asks_the_hub():
    cluster = {**CLUSTER, "hub": ["h1"]}
    renderer = RoleRenderer("spark", cluster, hostvars=MASTER_FACTS,
                            extra={"spark_connect_enabled": True, "spark_version": "4.0.1", **TLS})
    units = {u["name"]: u for u in renderer.value("__spark_units", "m1")}
    auth = units["spark-connect-auth"]
    assert auth["wanted"] in (True, "True")
    argv = shlex.split(auth["exec_start"])
    assert argv[:2] == ["/usr/bin/python3", "/opt/spark/plugins/connect_auth.py"]
    assert argv[argv.index("--listen") + 1] == "127.0.0.1:15013"
    assert argv[argv.index("--hub-url") + 1] == "https://h1"
    assert argv[argv.index("--cafile") + 1] == "/etc/ssl/certs/ca-certificates.crt"
    # The cluster token reaches it as the server's does: the root-only environment file.
    assert auth["environment_files"] == ["/etc/spark/connect/server.env", "/etc/spark/connect/accounts.env"]
    assert not any("token" in a.lower() for a in argv)
    # Without a hub, only the cluster token is accepted.
    alone = shlex.split({u["name"]: u for u in spark().value("__spark_units", "m1")}["spark-connect-auth"]["exec_start"])
    assert "--hub-url" not in alone


def test_the_notebook_hosts_accounts_get_tokens_of_their_own():
    cluster = {**CLUSTER, "notebook": ["nb1", "nb2"]}
    hostvars = {**MASTER_FACTS, "nb1": {}, "nb2": {"notebook_host_user": "lab", "notebook_host_users": ["alice", "bob"]}}
    renderer = RoleRenderer("spark", cluster, hostvars=hostvars, extra={"spark_connect_enabled": True, "spark_version": "4.0.1"})
    assert renderer.value("spark_connect_user_accounts", "m1") == ["alice", "bob", "jupyter", "lab"]
    assert spark().value("spark_connect_user_accounts", "m1") == ["jupyter"]
    alone = RoleRenderer("spark", {"spark_masters": ["m1"], "spark_workers": ["w1"]}, hostvars=MASTER_FACTS)
    assert alone.value("spark_connect_user_accounts", "m1") == []


def test_the_server_loads_the_user_check():
    argv = shlex.split(connect_unit(spark())["exec_start"])
    confs = dict(argv[i + 1].split("=", 1) for i, a in enumerate(argv) if a == "--conf")
    assert confs["spark.connect.grpc.interceptor.classes"] == "org.sparkfleet.connect.VerifiedUserInterceptor"
    assert re.fullmatch(r"/opt/spark/plugins/sparkfleet-connect-auth-[0-9a-f]{12}\.jar",
                        argv[argv.index("--driver-class-path") + 1])


def test_the_endpoint_follows_its_settings():
    site = spark(spark_connect_port=443, spark_connect_internal_port=15555, spark_connect_address="0.0.0.0",
                 spark_connect_proxy_timeout="8h").render("nginx-spark-connect.conf.j2", "m1")
    assert "listen 0.0.0.0:443 ssl http2;" in site
    assert "grpc_pass grpc://127.0.0.1:15555;" in site
    assert "grpc_read_timeout    8h;" in site


def test_the_server_binds_to_loopback_and_keeps_the_token_off_its_command_line():
    unit = connect_unit(spark())
    assert unit["wanted"] in (True, "True")
    argv = shlex.split(unit["exec_start"])
    assert argv[0] == "/opt/spark/current/bin/spark-submit"
    assert argv[argv.index("--class") + 1] == "org.apache.spark.sql.connect.service.SparkConnectServer"
    confs = dict(argv[i + 1].split("=", 1) for i, a in enumerate(argv) if a == "--conf")
    assert confs["spark.connect.grpc.binding.address"] == "127.0.0.1"
    assert confs["spark.connect.grpc.binding.port"] == "15012"
    # Idle: no executors held (dynamic allocation comes from spark-defaults.conf).
    assert confs["spark.dynamicAllocation.executorIdleTimeout"] == "60s"
    assert argv[-1] == "spark-internal"
    assert "--jars" not in argv
    assert not any("token" in a.lower() for a in argv)
    assert unit["environment_files"] == ["/etc/spark/connect/server.env"]
    assert unit["user"] == "spark"


def test_spark_3_5_loads_the_given_connect_jar():
    unit = connect_unit(spark(spark_version="3.5.8"))
    argv = shlex.split(unit["exec_start"])
    assert argv[argv.index("--jars") + 1] == "/opt/spark/plugins/spark-connect_2.12-3.5.8.jar"


def test_only_masters_run_it_and_only_when_enabled():
    assert connect_unit(spark(), "w1")["wanted"] in (False, "False")
    off = RoleRenderer("spark", CLUSTER, hostvars=MASTER_FACTS)
    assert connect_unit(off)["wanted"] in (False, "False")


def test_the_certificate_names_the_master_and_its_address():
    sans = spark(spark_connect_tls_extra_sans=["DNS:spark.example.com"]).value("__spark_connect_tls_sans", "m1")
    assert sans == ["DNS:m1", "IP:10.1.2.3", "DNS:spark.example.com"]
    assert "IP:0.0.0.0" not in spark(spark_connect_address="0.0.0.0").value("__spark_connect_tls_sans", "m1")


def test_the_service_unit_reads_environment_files():
    renderer = RoleRenderer("service", {"all_hosts": ["h1"]}, extra={"item": {
        "name": "x", "description": "x", "exec_start": "/bin/true", "environment_files": ["/etc/a.env", "/etc/b.env"]}})
    unit = renderer.render("unit.service.j2", "h1")
    assert "EnvironmentFile=/etc/a.env\nEnvironmentFile=/etc/b.env\n" in unit


# --- The notebook host -------------------------------------------------------------------------

def notebook(**extra):
    hostvars = {"m1": {"spark_connect_enabled": True, "spark_version": "4.0.1"}}
    return RoleRenderer("notebook_host", CLUSTER, hostvars=hostvars,
                        extra={"__notebook_host_connect_tokens": {"jupyter": "tok-123"}, "item": "jupyter", **extra})


def env_file(text):
    pairs = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.split("=", 1)
            pairs[name] = shlex.split(value)[0]
    return pairs


def test_the_notebook_settings_name_the_tls_endpoint_with_the_token_and_the_ca_bundle():
    settings = env_file(notebook().render("spark.env.j2", "nb1"))
    assert settings == {
        "SPARK_REMOTE": "sc://m1:15002/;use_ssl=true;token=tok-123;user_id=jupyter",
        "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH": "/etc/ssl/certs/ca-certificates.crt",
    }


def test_the_notebook_reads_the_masters_connect_settings_from_the_inventory():
    renderer = RoleRenderer("notebook_host", CLUSTER,
                            hostvars={"m1": {"spark_connect_enabled": True, "spark_connect_port": 443,
                                             "spark_version": "4.0.1"}},
                            extra={"__notebook_host_connect_tokens": {"bob": "t"}, "item": "bob"})
    assert env_file(renderer.render("spark.env.j2", "nb1"))["SPARK_REMOTE"] == "sc://m1:443/;use_ssl=true;token=t;user_id=bob"
    assert renderer.value("__notebook_host_pip_packages", "nb1") == ["jupyterlab==4.6.6", "pyspark-client==4.0.1"]


def test_spark_3_5_clients_get_pyspark_with_connect_and_livy_gets_sparkmagic():
    renderer = notebook(notebook_host_spark_version="3.5.8", notebook_host_livy_enabled=True)
    assert renderer.value("__notebook_host_pip_packages", "nb1") == [
        "jupyterlab==4.6.6", "pyspark[connect]==3.5.8", "sparkmagic==0.23.0"]


def test_sparkmagic_speaks_to_livy_over_tls_with_each_accounts_own_login_and_the_csrf_header():
    groups = {**CLUSTER, "livy": ["m1"]}
    passwords = {"alice": "pw-a", "bob": "pw-b"}
    for account, password in passwords.items():
        renderer = RoleRenderer("notebook_host", groups, hostvars={"m1": {"spark_version": "3.5.8"}},
                                extra={"notebook_host_livy_enabled": True, "__notebook_host_livy_passwords": passwords,
                                       "__notebook_host_account": account})
        config = json.loads(renderer.render("sparkmagic-config.json.j2", "nb1"))
        for kernel in ("kernel_python_credentials", "kernel_scala_credentials", "kernel_r_credentials"):
            assert config[kernel] == {"url": "https://m1:8998", "auth": "Basic_Access", "username": account,
                                      "password": password}
        assert config["custom_headers"] == {"X-Requested-By": "sparkmagic"}
        assert config["ignore_ssl_errors"] is False


def test_requests_checks_livys_certificate_with_the_system_bundle_only_with_livy():
    with_livy = env_file(notebook(notebook_host_livy_enabled=True).render("spark.env.j2", "nb1"))
    assert with_livy["REQUESTS_CA_BUNDLE"] == "/etc/ssl/certs/ca-certificates.crt"
    assert "REQUESTS_CA_BUNDLE" not in env_file(notebook(notebook_host_livy_enabled=False).render("spark.env.j2", "nb1"))


def test_jupyterlab_listens_on_loopback_and_reads_its_token_and_the_spark_settings_from_files():
    renderer = RoleRenderer("notebook_host", CLUSTER, hostvars={
        "m1": {"spark_connect_enabled": True},
        "nb1": {"ansible_facts": {"getent_passwd": {"jupyter": ["x", "1000", "1000", "", "/home/jupyter", "/bin/bash"]}}}})
    unit = renderer.value("__notebook_host_units", "nb1")[0]
    argv = shlex.split(unit["exec_start"])
    assert "--ip=127.0.0.1" in argv and "--port=8888" in argv and "--no-browser" in argv
    assert not any("token" in a.lower() for a in argv)
    assert unit["environment_files"] == ["/etc/sparkfleet/notebook/jupyterlab.env", "/home/jupyter/.sparkfleet/spark.env"]
    assert unit["user"] == "jupyter"


def test_the_notebook_role_is_in_the_notebooks_layer():
    plays = yaml.safe_load((ROOT / "playbooks" / "notebooks.yml").read_text())
    play = next(p for p in plays if p["hosts"].split(":")[0] == "notebook")
    assert play["tasks"][0]["sparkfleet.cluster.applied_state"]["roles"] == ["notebook_host"]


@pytest.mark.parametrize("role", ["spark", "notebook_host"])
def test_secret_files_are_written_without_logging(role):
    for path in (ROOT / "roles" / role / "tasks").glob("*.yml"):
        for task in yaml.safe_load(path.read_text()) or []:
            text = json.dumps(task)
            if "token }}" in text and ("ansible.builtin.copy" in task or "ansible.builtin.template" in task):
                assert task.get("no_log") is True, f"{path.name}: {task['name']}"
