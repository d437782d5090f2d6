"""The livy role's configuration, rendered from its own defaults and parsed; the nginx site run by a
real nginx (where one is installed) in front of a recording upstream."""

import base64
import http.client
import http.server
import pathlib
import re
import ssl
import subprocess
import threading

import pytest
import yaml

from conftest import RoleRenderer, debian_tool, free_port, running_nginx, write_nginx_conf

ROOT = pathlib.Path(__file__).resolve().parents[2]

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


TLS = {"certificate": "/etc/ssl/sparkfleet/livy.crt", "key": "/etc/ssl/sparkfleet/livy.key", "changed": False}


def test_basic_auth_keeps_livy_on_loopback_behind_the_tls_proxy():
    renderer = RoleRenderer("livy", CLUSTER, hostvars={"m1": {"ansible_facts": {
        "default_ipv4": {"address": "10.1.2.3"}, "fqdn": "m1.cluster.example"}}}, extra={"__livy_tls": TLS})
    props = hocon_properties(renderer.render("livy.conf.j2", "m1"))
    assert props["livy.server.host"] == "127.0.0.1"
    assert props["livy.server.port"] == "18998"
    site = renderer.render("nginx-livy.conf.j2", "m1")
    assert "listen 10.1.2.3:8998 ssl;" in site
    assert "ssl_certificate     /etc/ssl/sparkfleet/livy.crt;" in site
    assert "ssl_certificate_key /etc/ssl/sparkfleet/livy.key;" in site
    assert renderer.value("__livy_tls_sans", "m1") == ["DNS:m1", "DNS:m1.cluster.example", "IP:10.1.2.3"]
    assert renderer.value("__livy_url", "m1") == "https://10.1.2.3:8998"


def test_livy_learns_the_account_from_the_proxy_and_runs_sessions_as_it():
    props = conf()
    assert props["livy.server.auth.type"] == "sparkfleet"
    assert props["livy.server.auth.sparkfleet.class"] == "org.apache.hadoop.security.authentication.server.AuthenticationFilter"
    assert props["livy.server.auth.sparkfleet.param.type"] == "simple"
    assert props["livy.server.auth.sparkfleet.param.simple.anonymous.allowed"] == "false"
    assert props["livy.impersonation.enabled"] == "true"
    # Without access control any account could run code in another's session (which runs as that one).
    assert props["livy.server.access-control.enabled"] == "true"
    assert props["livy.server.access-control.allowed-users"] == "*"
    assert "livy.server.access-control.modify-users" not in props
    # No account may act for another unless listed.
    assert "livy.superusers" not in props
    assert conf(livy_superusers=["ops", "admin2"])["livy.superusers"] == "ops,admin2"
    # The restart check asks as Livy's own user (a request without one is refused).
    assert RoleRenderer("livy", CLUSTER).value("__livy_health_url", "m1") == "http://127.0.0.1:18998/sessions?user.name=livy"


def test_the_accounts_default_to_the_notebook_hosts_accounts():
    groups = {**CLUSTER, "notebook": ["nb1", "nb2"]}
    renderer = RoleRenderer("livy", groups, hostvars={
        "nb1": {}, "nb2": {"notebook_host_user": "lab", "notebook_host_users": ["alice", "bob"]}})
    assert renderer.value("livy_users", "m1") == ["alice", "bob", "jupyter", "lab"]


def test_csrf_protection_and_session_lifetimes():
    props = conf()
    assert props["livy.server.csrf-protection.enabled"] == "true"
    assert props["livy.server.session.timeout-check"] == "true"
    assert props["livy.server.session.timeout-check.skip-busy"] == "true"
    # Not Livy's 1h default, which kills idle notebooks.
    assert props["livy.server.session.timeout"] == "8h"
    assert props["livy.server.heartbeat-watchdog.interval"] == "1m"
    assert props["livy.environment"] == "production"
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
    # Livy's absolute redirects come back as gateway paths (what reaches Livy: test_the_real_nginx_...).
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


# --- The rendered sites, run by a real nginx ----------------------------------------------------

class _Recorder(http.server.BaseHTTPRequestHandler):
    """Livy's stand-in: records the request line's target and headers, answers 200."""
    seen = []

    def _answer(self):
        self.seen.append((self.command, self.path, {k.lower(): v for k, v in self.headers.items()}))
        self.send_response(200)
        self.send_header("Set-Cookie", "hadoop.auth=token")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    do_GET = do_POST = do_DELETE = _answer

    def log_message(self, format, *args):  # pylint: disable=redefined-builtin
        pass


@pytest.fixture(name="nginx")
def nginx_fixture(tmp_path):
    """nginx with Livy's rendered site (TLS, the password file as configure.yml writes it) and the UI
    gateway's rendered locations in a server of their own, in front of a recording upstream."""
    binary = debian_tool("nginx", "nginx-light")
    upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    _Recorder.seen = []
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-days", "1",
                    "-keyout", str(tmp_path / "livy.key"), "-out", str(tmp_path / "livy.crt")],
                   check=True, capture_output=True)
    port, gateway_port = free_port(), free_port()
    passwords = {"alice": "alice-pw", "bob": "bob-pw"}
    renderer = RoleRenderer("livy", CLUSTER, extra={
        "livy_bind_address": "127.0.0.1", "livy_port": port, "livy_internal_port": upstream.server_address[1],
        "livy_users": list(passwords), "__livy_passwords": passwords, "__livy_htpasswd": str(tmp_path / "htpasswd"),
        "__livy_tls": {"certificate": str(tmp_path / "livy.crt"), "key": str(tmp_path / "livy.key")}})
    # The password file as configure.yml makes it: its hashing command per account, then its content.
    tasks = {task["name"]: task for task in yaml.safe_load((ROOT / "roles/livy/tasks/configure.yml").read_text())}
    results = []
    for account in passwords:
        command = RoleRenderer("livy", CLUSTER, extra={**renderer.extra, "__livy_account": account}).string(
            tasks["Livy | Hash each account's password."]["ansible.builtin.command"], "m1")
        hashed = subprocess.run(command["argv"], input=command["stdin"], text=True, capture_output=True,
                                check=True).stdout
        results.append({"__livy_account": account, "stdout": hashed})
    content = RoleRenderer("livy", CLUSTER, extra={**renderer.extra, "__livy_hashes": {"results": results}}).string(
        tasks["Livy | Write nginx's password file."]["ansible.builtin.copy"]["content"], "m1")
    assert content.count("\n") == len(passwords) and content.endswith("\n")
    (tmp_path / "htpasswd").write_text(content)
    (tmp_path / "livy.conf").write_text(renderer.render("nginx-livy.conf.j2", "m1"))
    (tmp_path / "gateway.conf").write_text(renderer.render("ui-gateway-livy.conf.j2", "m1"))
    write_nginx_conf(tmp_path, f"""\
    include {tmp_path}/livy.conf;
    server {{
        listen 127.0.0.1:{gateway_port};
        include {tmp_path}/gateway.conf;
    }}
""")
    try:
        with running_nginx(binary, tmp_path, port):
            context = ssl.create_default_context(cafile=str(tmp_path / "livy.crt"))
            yield {"port": port, "gateway_port": gateway_port, "context": context, "seen": _Recorder.seen}
    finally:
        upstream.shutdown()


def _request(nginx, method, target, account=None, password=None, headers=None, tls=True, port=None):
    port = port or nginx["port"]
    connection = (http.client.HTTPSConnection("127.0.0.1", port, context=nginx["context"], timeout=10) if tls
                  else http.client.HTTPConnection("127.0.0.1", port, timeout=10))
    headers = dict(headers or {})
    if account:
        headers["Authorization"] = "Basic " + base64.b64encode(f"{account}:{password}".encode()).decode()
    connection.request(method, target, headers=headers)
    response = connection.getresponse()
    response.read()
    connection.close()
    return response


def test_the_real_nginx_refuses_plain_http_and_wrong_passwords(nginx):
    assert _request(nginx, "GET", "/sessions", "alice", "alice-pw", tls=False).status == 400
    assert _request(nginx, "GET", "/sessions").status == 401
    assert _request(nginx, "GET", "/sessions", "alice", "bob-pw").status == 401
    assert _request(nginx, "GET", "/sessions", "mallory", "alice-pw").status == 401
    assert not nginx["seen"]


def test_the_real_nginx_tells_livy_the_checked_account_first_and_passes_no_cookie(nginx):
    response = _request(nginx, "GET", "/sessions/%3Fuser.name=bob/log?user.name=bob&doAs=bob&from=0", "alice", "alice-pw",
                        headers={"Cookie": "hadoop.auth=u=bob&p=bob&t=simple"})
    assert response.status == 200
    assert response.getheader("Set-Cookie") is None
    method, target, headers = nginx["seen"][-1]
    assert method == "GET"
    # The client's path as it sent it (still encoded), then the account nginx checked, first.
    assert target == "/sessions/%3Fuser.name=bob/log?user.name=alice&user.name=bob&doAs=bob&from=0"
    assert "cookie" not in headers and "authorization" not in headers
    assert _request(nginx, "POST", "/sessions", "bob", "bob-pw").status == 200
    assert nginx["seen"][-1][:2] == ("POST", "/sessions?user.name=bob&")


def test_the_real_nginx_lets_the_gateway_read_as_its_viewer_only(nginx):
    gateway = {"port": nginx["gateway_port"]}
    assert _request(nginx, "GET", "/livy/sessions?user.name=bob", tls=False, **gateway).status == 200
    assert nginx["seen"][-1][1] == "/sessions?user.name=sparkfleet.ui-gateway&user.name=bob"
    assert _request(nginx, "GET", "/livy", tls=False, **gateway).status == 200
    assert nginx["seen"][-1][1] == "/?user.name=sparkfleet.ui-gateway&"
    assert _request(nginx, "POST", "/livy/sessions", tls=False, **gateway).status == 403
