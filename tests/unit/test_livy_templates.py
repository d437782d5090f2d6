"""The livy role's configuration, rendered from its own defaults and parsed."""

import re

import pytest

from conftest import RoleRenderer

CLUSTER = {"spark_masters": ["m1"], "spark_workers": ["w1", "w2"], "livy": ["m1"]}


def hocon_properties(text):
    """livy.conf: `key = value` lines (the subset of HOCON Livy's templates use); a key set twice fails."""
    props = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        assert sep, f"not a property: {line!r}"
        key = key.strip()
        assert key not in props, f"{key} set twice"
        props[key] = value.strip()
    return props


def conf(**extra):
    return hocon_properties(RoleRenderer("livy", CLUSTER, extra=extra).render("livy.conf.j2", "m1"))


def test_basic_auth_keeps_livy_on_loopback_behind_the_proxy():
    renderer = RoleRenderer("livy", CLUSTER, hostvars={"m1": {"ansible_facts": {
        "default_ipv4": {"address": "10.1.2.3"}}}})
    props = hocon_properties(renderer.render("livy.conf.j2", "m1"))
    assert props["livy.server.host"] == "127.0.0.1"
    assert props["livy.server.port"] == "18998"
    assert "livy.server.auth.type" not in props
    site = renderer.render("nginx-livy.conf.j2", "m1")
    assert "listen 10.1.2.3:8998;" in site
    assert "auth_basic_user_file /etc/sparkfleet/livy/nginx.htpasswd;" in site
    assert "proxy_pass http://127.0.0.1:18998;" in site


def test_csrf_protection_and_session_lifetimes():
    props = conf()
    assert props["livy.server.csrf-protection.enabled"] == "true"
    assert props["livy.server.session.timeout-check"] == "true"
    assert props["livy.server.session.timeout-check.skip-busy"] == "true"
    # Not Livy's 1h default, which kills idle notebooks.
    assert props["livy.server.session.timeout"] == "8h"
    assert props["livy.server.heartbeat-watchdog.interval"] == "1m"
    assert props["livy.environment"] == "production"
    assert props["livy.impersonation.enabled"] == "false"
    client = hocon_properties(RoleRenderer("livy", CLUSTER).render("livy-client.conf.j2", "m1"))
    assert client["livy.rsc.server.idle-timeout"] == "8h"


@pytest.mark.parametrize("manager, master", [("standalone", "spark://m1:7077"), ("yarn", "yarn")])
def test_sessions_use_the_cluster_manager(manager, master):
    props = conf(spark_cluster_manager=manager)
    assert props["livy.spark.master"] == master
    assert props["livy.spark.deploy-mode"] == "client"


def test_hadoop_conf_dir_is_exported_on_yarn_only():
    yarn = RoleRenderer("livy", CLUSTER, extra={"spark_cluster_manager": "yarn"}).render("livy-env.sh.j2", "m1")
    standalone = RoleRenderer("livy", CLUSTER).render("livy-env.sh.j2", "m1")
    assert 'export HADOOP_CONF_DIR="/etc/hadoop/conf"' in yarn.splitlines()
    assert "HADOOP_CONF_DIR" not in standalone
    assert 'export SPARK_HOME="/opt/spark/current"' in standalone.splitlines()


def test_ldap_binds_livy_itself_to_the_private_interface():
    renderer = RoleRenderer("livy", CLUSTER, hostvars={"m1": {"ansible_facts": {"default_ipv4": {"address": "10.1.2.3"}}}},
                            extra={"livy_auth": "ldap", "livy_ldap_url": "ldaps://ldap.example", "livy_ldap_base_dn": "dc=ex"})
    props = hocon_properties(renderer.render("livy.conf.j2", "m1"))
    assert props["livy.server.auth.type"] == "ldap"
    assert props["livy.server.auth.ldap.url"] == "ldaps://ldap.example"
    assert props["livy.server.auth.ldap.base-dn"] == "dc=ex"
    assert (props["livy.server.host"], props["livy.server.port"]) == ("10.1.2.3", "8998")


def test_kerberos():
    props = conf(livy_auth="kerberos", livy_kerberos_principal="HTTP/m1@EX", livy_kerberos_keytab="/etc/livy/http.keytab")
    assert props["livy.server.auth.type"] == "kerberos"
    assert props["livy.server.auth.kerberos.principal"] == "HTTP/m1@EX"
    assert props["livy.server.auth.kerberos.keytab"] == "/etc/livy/http.keytab"


def test_extra_properties_are_appended_once():
    props = conf(livy_extra_conf={"livy.server.session.max-creation": 10, "livy.ui.enabled": False})
    assert props["livy.server.session.max-creation"] == "10"
    assert props["livy.ui.enabled"] == "false"


def test_release_layout():
    renderer = RoleRenderer("livy", CLUSTER)
    assert renderer.value("__livy_zip_name", "m1") == "apache-livy-0.9.0-incubating_2.12-bin.zip"
    assert renderer.value("__livy_unit[0].exec_start", "m1") == "/opt/livy/current/bin/livy-server"


def _gateway_renderer(groups=None, **extra):
    return RoleRenderer("livy", groups or CLUSTER, extra=extra)


def test_the_ui_sits_on_the_masters_gateway_under_its_prefix():
    renderer = _gateway_renderer()
    props = hocon_properties(renderer.render("livy.conf.j2", "m1"))
    assert props["livy.ui.basePath"] == "/livy"
    assert renderer.value("__livy_ui_gateway_location", "m1") == "/etc/nginx/sparkfleet-ui/locations/livy.conf"
    site = renderer.render("ui-gateway-livy.conf.j2", "m1")
    code = "\n".join(line for line in site.splitlines() if not line.lstrip().startswith("#"))
    # Both the bare prefix and everything under it go to Livy on loopback with the prefix stripped;
    # Livy's absolute redirects come back as gateway paths.
    assert code.count("proxy_pass http://127.0.0.1:18998/;") == 2
    assert code.count("proxy_redirect http://127.0.0.1:18998/ /;") == 2
    assert "location = /livy {" in code and "location /livy/ {" in code
    # Inside the gateway's server: nothing may answer before its login, nor switch it off.
    assert not re.search(r"^\s*(return|rewrite|auth_basic)\b", code, re.M)
    assert re.search(r"limit_except GET \{\s*deny all;\s*\}", code)


@pytest.mark.parametrize("groups, extra", [
    # Livy on a host that runs no gateway (not a Spark master).
    ({"spark_masters": ["m1"], "spark_workers": ["w1"], "livy": ["w1"]}, {}),
    # Livy's own authentication: it listens on the private interface, the gateway does not front it.
    (None, {"livy_auth": "ldap", "livy_ldap_url": "ldaps://ldap.example", "livy_ldap_base_dn": "dc=ex"}),
    (None, {"livy_ui_gateway_path": ""}),
    (None, {"ui_gateway_enabled": False}),
])
def test_the_ui_stays_off_the_gateway(groups, extra):
    renderer = _gateway_renderer(groups, **extra)
    host = (groups or CLUSTER)["livy"][0]
    assert renderer.value("__livy_on_ui_gateway | bool", host) is False
    assert "livy.ui.basePath" not in hocon_properties(renderer.render("livy.conf.j2", host))


def test_a_trailing_slash_in_the_path_is_dropped():
    renderer = _gateway_renderer(livy_ui_gateway_path="/tools/livy/")
    assert hocon_properties(renderer.render("livy.conf.j2", "m1"))["livy.ui.basePath"] == "/tools/livy"
    assert "location /tools/livy/ {" in renderer.render("ui-gateway-livy.conf.j2", "m1")
