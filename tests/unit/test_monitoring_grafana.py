"""The monitoring role's optional Grafana: its grafana.ini (no anonymous access, no sign-up, an auth proxy
trusted from loopback only, loopback listener), its provisioning (Prometheus on loopback, the cluster's
dashboard), its checks, and its location on the UI gateway, run in a real nginx: the gateway's login is
required and the user it let in is what Grafana is told, whatever the client sends."""

import base64
import configparser
import http.client
import http.server
import json
import re
import subprocess
import threading

import pytest
import yaml

from conftest import ROOT, RoleRenderer, debian_tool, free_port, running_nginx, write_nginx_conf
from test_monitoring_templates import CLUSTER, monitoring

SECRETS = {"__monitoring_grafana_admin_password": "pw#1;x", "__monitoring_grafana_secret_key": "key;2#y"}
VALIDATE = ROOT / "roles/monitoring/tasks/validate.yml"
DASHBOARD = ROOT / "roles/monitoring/files/grafana-cluster-dashboard.json"
GRAFANA_PATHS = ("/etc/grafana/", "/etc/apt/keyrings/sparkfleet-grafana.asc", "/etc/apt/sources.list.d/sparkfleet-grafana.sources")


def grafana(groups=None, **extra):
    return monitoring(groups, monitoring_grafana_enabled=True, **SECRETS, **extra)


def ini(renderer=None):
    parser = configparser.ConfigParser(interpolation=None, comment_prefixes=(";", "#"))
    parser.read_string((renderer or grafana()).render("grafana.ini.j2", "m1"))
    return parser


def test_grafana_is_off_by_default_and_leaves_nothing_behind():
    defaults = yaml.safe_load((ROOT / "roles/monitoring/defaults/main.yml").read_text())
    assert defaults["monitoring_grafana_enabled"] is False
    off = monitoring()
    assert off.value("__monitoring_grafana", "m1") is False
    applied = off.applied("m1")
    assert not [f for f in applied["files"] if f.startswith(GRAFANA_PATHS)]
    assert "grafana-server" not in applied["units"]
    assert "monitoring_grafana_port" not in off.value("__monitoring_host_ports", "m1")
    assert off.value("__monitoring_all_server_units", "m1") == ["prometheus", "prometheus-alertmanager"]
    assert "grafana" not in off.render("ui-gateway-monitoring.conf.j2", "m1")


def test_enabled_it_runs_on_the_monitoring_host_only_and_the_role_tracks_it():
    renderer = grafana()
    assert renderer.value("__monitoring_grafana", "m1") is True
    assert renderer.value("__monitoring_grafana", "w1") is False
    applied = renderer.applied("m1")
    assert {"/etc/grafana/grafana.ini", "/etc/grafana/provisioning/datasources/sparkfleet.yaml",
            "/etc/grafana/provisioning/dashboards/sparkfleet.yaml", "/etc/grafana/sparkfleet-dashboards/cluster.json",
            "/etc/apt/keyrings/sparkfleet-grafana.asc", "/etc/apt/sources.list.d/sparkfleet-grafana.sources"} <= set(applied["files"])
    assert "grafana-server" in applied["units"]
    assert "grafana-server" not in renderer.applied("w1")["units"]
    assert renderer.value("__monitoring_host_ports", "m1")["monitoring_grafana_port"] == 3000
    assert renderer.value("__monitoring_health_urls", "m1")["grafana-server"] == "http://127.0.0.1:3000/grafana/api/health"


def test_grafana_listens_on_loopback_and_lets_nobody_in_without_the_gateways_login():
    conf = ini()
    assert conf["server"]["http_addr"] == "127.0.0.1"
    assert conf["server"]["http_port"] == "3000"
    assert conf["server"]["root_url"] == "https://10.0.0.1:8443/grafana/"
    assert conf["server"]["serve_from_sub_path"] == "true"
    assert conf["auth.anonymous"]["enabled"] == "false"
    assert conf["users"]["allow_sign_up"] == "false"
    assert conf["auth"]["disable_login_form"] == "true"
    assert conf["auth.basic"]["enabled"] == "false"
    assert conf["public_dashboards"]["enabled"] == "false"
    assert conf["snapshots"]["external_enabled"] == "false"
    proxy = conf["auth.proxy"]
    assert (proxy["enabled"], proxy["header_name"], proxy["whitelist"], proxy["auto_sign_up"]) == \
        ("true", "X-WEBAUTH-USER", "127.0.0.1", "true")
    assert (conf["analytics"]["reporting_enabled"], conf["analytics"]["check_for_updates"]) == ("false", "false")
    # The gateway's admin is Grafana's admin; the secrets are quoted as Grafana reads values with # and ;.
    assert conf["security"]["admin_user"] == "admin"
    assert conf["security"]["admin_password"] == '"""pw#1;x"""'
    assert conf["security"]["secret_key"] == '"""key;2#y"""'


def test_the_data_source_is_prometheus_on_loopback_and_the_dashboard_reads_it():
    sources = yaml.safe_load(grafana().render("grafana-datasource.yaml.j2", "m1"))["datasources"]
    assert sources == [{"name": "Prometheus", "uid": "sparkfleet-prometheus", "type": "prometheus", "access": "proxy",
                        "url": "http://127.0.0.1:9090/prometheus", "isDefault": True, "editable": False,
                        "jsonData": {"timeInterval": "30s"}}]
    moved = yaml.safe_load(grafana(monitoring_prometheus_port=9191, monitoring_prometheus_path="/prom")
                           .render("grafana-datasource.yaml.j2", "m1"))
    assert moved["datasources"][0]["url"] == "http://127.0.0.1:9191/prom"
    [provider] = yaml.safe_load(grafana().render("grafana-dashboards.yaml.j2", "m1"))["providers"]
    assert provider["options"]["path"] == "/etc/grafana/sparkfleet-dashboards"
    assert provider["allowUiUpdates"] is False


def test_the_dashboard_uses_the_exporters_metric_names():
    board = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in board["panels"] for t in p["targets"]]
    assert {p["datasource"]["uid"] for p in board["panels"]} == {"sparkfleet-prometheus"}
    exporter = (ROOT / "roles/gpu_exporter/files/sparkfleet_gpu_exporter.py").read_text()
    gpu_names = {n for e in exprs for n in re.findall(r"sparkfleet_gpu_[a-z_]+", e)}
    assert gpu_names and all(f'"{name}"' in exporter for name in gpu_names)
    text = " ".join(exprs)
    for metric in ("node_cpu_seconds_total", "node_memory_MemAvailable_bytes", "metrics_master_aliveWorkers_Value",
                   "sparkfleet_gpu_process_memory_used_bytes"):
        assert metric in text
    assert "holder" in text and "by (host" in text


def test_the_repository_is_signed_by_the_pinned_key_only():
    text = grafana().render("grafana.sources.j2", "m1")
    assert "URIs: https://apt.grafana.com\n" in text and "Suites: stable\n" in text and "Components: main\n" in text
    assert "Signed-By: /etc/apt/keyrings/sparkfleet-grafana.asc" in text


# --- validate.yml ----------------------------------------------------------------------------------

def _check(renderer, name, host="m1"):
    [task] = [t for t in yaml.safe_load(VALIDATE.read_text()) if t.get("name") == name]
    if not renderer.value(f"({task['when']}) | bool", host):
        return True, ""
    that = task["ansible.builtin.assert"]["that"]
    held = all(renderer.value(f"({c}) | bool", host) for c in ([that] if isinstance(that, str) else that))
    return held, renderer.string(task["ansible.builtin.assert"]["fail_msg"], host)


WHERE = "Monitoring | Check where Grafana would run."
KEY = "Monitoring | Check Grafana's path, port and pinned signing key."


def test_validate_accepts_grafana_on_the_gateways_master_and_checks_nothing_while_off():
    assert _check(grafana(), WHERE)[0] is True
    assert _check(grafana(), KEY)[0] is True
    elsewhere = {**CLUSTER, "monitoring": ["mon1"]}
    assert _check(monitoring(elsewhere), WHERE) == (True, "")


@pytest.mark.parametrize("groups, extra, says", [
    ({**CLUSTER, "monitoring": ["mon1"]}, {}, "mon1 is not a Spark master"),
    (CLUSTER, {"ui_gateway_enabled": False}, "ui_gateway_enabled is false"),
], ids=["monitoring-group-host", "no-gateway"])
def test_validate_refuses_grafana_where_the_gateway_cannot_publish_it(groups, extra, says):
    held, message = _check(grafana(groups, **extra), WHERE, host="m1")
    assert held is False
    assert "monitoring_grafana_enabled" in message and says in message


@pytest.mark.parametrize("extra", [
    {"monitoring_grafana_gpg_key_fingerprints": []},
    {"monitoring_grafana_gpg_key_fingerprints": ["10458545"]},
    {"monitoring_grafana_path": "/prometheus"},
    {"monitoring_grafana_path": "/grafana/"},
], ids=["no-pin", "short-id", "prometheus-path", "trailing-slash"])
def test_validate_refuses_a_missing_pin_or_a_bad_path(extra):
    held, message = _check(grafana(**extra), KEY)
    assert held is False and "monitoring_grafana_gpg_key_fingerprints" in message


def test_the_key_goes_through_the_pinned_route_before_the_sources_file():
    tasks = yaml.safe_load((ROOT / "roles/monitoring/tasks/grafana.yml").read_text())
    names = [t["name"] for t in tasks]
    [key] = [t for t in tasks if t.get("ansible.builtin.include_role", {}).get("tasks_from") == "apt_key"]
    assert key["vars"]["platform_apt_key_fingerprints"] == "{{ monitoring_grafana_gpg_key_fingerprints }}"
    assert names.index(key["name"]) < names.index("Monitoring | Add Grafana's repository.")
    secret_tasks = [t for t in tasks if "ansible.builtin.template" in t and "grafana.ini" in json.dumps(t)]
    assert secret_tasks and all(t.get("no_log") is True for t in secret_tasks)


# --- The gateway's location in a real nginx ----------------------------------------------------------

class _Grafana(http.server.BaseHTTPRequestHandler):
    """Grafana: answers every GET with the path and the headers it decides on."""

    def do_GET(self):  # pylint: disable=invalid-name
        seen = {name: self.headers.get(name) for name in ("X-WEBAUTH-USER", "Authorization", "Host", "Upgrade",
                                                          "Connection", "X-Forwarded-Proto")}
        body = json.dumps({"path": self.path, **seen}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args):  # pylint: disable=redefined-builtin
        pass


def _get(port, path, headers=None):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("GET", path, headers=headers or {})
    response = connection.getresponse()
    body = response.read().decode()
    connection.close()
    return response.status, (json.loads(body) if response.status == 200 else None)


def test_the_real_nginx_asks_the_login_and_names_only_the_user_it_let_in(tmp_path):
    binary = debian_tool("nginx", "nginx-light")
    upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Grafana)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    hashed = subprocess.run(["openssl", "passwd", "-6", "-stdin"], input="gateway-pw", text=True, capture_output=True,
                            check=True).stdout.strip()
    (tmp_path / "htpasswd").write_text(f"admin:{hashed}\n")
    gateway_port = free_port()
    renderer = grafana(monitoring_grafana_port=upstream.server_address[1])
    (tmp_path / "locations.conf").write_text(renderer.render("ui-gateway-monitoring.conf.j2", "m1"))
    write_nginx_conf(tmp_path, f"""\
    server {{
        listen 127.0.0.1:{gateway_port};
        auth_basic "gateway";
        auth_basic_user_file {tmp_path}/htpasswd;
        proxy_http_version 1.1;
        include {tmp_path}/locations.conf;
    }}
""")
    checked = subprocess.run([binary, "-t", "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf")],
                             capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stderr
    login = {"Authorization": "Basic " + base64.b64encode(b"admin:gateway-pw").decode()}
    try:
        with running_nginx(binary, tmp_path, gateway_port):
            # Without the login, or with a user header of its own, nothing reaches Grafana.
            assert _get(gateway_port, "/grafana/")[0] == 401
            assert _get(gateway_port, "/grafana/api/live/ws", {"X-WEBAUTH-USER": "admin"})[0] == 401
            bad = dict(login, Authorization=login["Authorization"][:-4] + "AAAA")
            assert _get(gateway_port, "/grafana/api/dashboards", bad)[0] == 401
            # With it, Grafana gets the path as it is and the user the login let in, not the client's header
            # (in any case), nor the password.
            for header in ("X-WEBAUTH-USER", "x-webauth-user"):
                status, seen = _get(gateway_port, "/grafana/d/sparkfleet-cluster", {**login, header: "mallory",
                                                                                    "Host": "gw.example:8443"})
                assert status == 200
                assert seen["path"] == "/grafana/d/sparkfleet-cluster"
                assert seen["X-WEBAUTH-USER"] == "admin" and seen["Authorization"] is None
                assert seen["Host"] == "gw.example:8443" and seen["X-Forwarded-Proto"] == "https"
            status, seen = _get(gateway_port, "/grafana/api/live/ws",
                                {**login, "X-WEBAUTH-USER": "mallory", "Upgrade": "websocket", "Connection": "Upgrade"})
            assert status == 200 and seen["X-WEBAUTH-USER"] == "admin" and seen["Authorization"] is None
            assert (seen["Upgrade"], seen["Connection"]) == ("websocket", "upgrade")
    finally:
        upstream.shutdown()


def test_without_grafana_the_gateway_has_no_grafana_route():
    text = monitoring(monitoring_grafana_port=3000).render("ui-gateway-monitoring.conf.j2", "m1")
    assert "/grafana" not in text and "X-WEBAUTH-USER" not in text
    assert RoleRenderer("monitoring", CLUSTER).value("monitoring_grafana_enabled") is False
