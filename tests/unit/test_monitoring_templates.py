"""The monitoring role: Prometheus's configuration, the alert rules, the exporters' web configuration and
the gateway's locations, rendered from the role's own defaults and vars; and, with Debian's promtool,
the rendered configuration checked and the alert rules run against recorded series."""

import base64
import http.client
import http.server
import ssl
import subprocess
import threading

import yaml

from conftest import RoleRenderer, debian_tool, facts, free_port, running_nginx, write_nginx_conf

CLUSTER = {"spark_masters": ["m1"], "spark_workers": ["w1", "w2"], "gpu_workers": ["w2"], "hub": ["hub1"],
           "swarm_managers": ["hub1"], "swarm_workers": ["w1", "w2"], "notebook": ["nb1"]}
HOSTVARS = {"m1": {"ansible_facts": facts(address="10.0.0.1")}, "w1": {"ansible_facts": facts(address="10.0.0.2")},
            "w2": {"ansible_facts": facts(address="10.0.0.3")}, "hub1": {"ansible_facts": facts(address="10.0.0.4")},
            "nb1": {"ansible_facts": facts(address="10.0.0.9")}}
CA = {"pki_ca_file": "/usr/local/share/ca-certificates/sparkfleet-cluster-ca.crt"}


def monitoring(groups=None, **extra):
    return RoleRenderer("monitoring", groups or CLUSTER, hostvars=HOSTVARS, extra={**CA, **extra})


def config(renderer=None, host="m1"):
    return yaml.safe_load((renderer or monitoring()).render("prometheus.yml.j2", host))


def jobs(conf):
    return {job["job_name"]: job for job in conf["scrape_configs"]}


def targets(job):
    return {t["labels"]["host"]: t["targets"][0] for t in job["static_configs"]}


def test_the_server_runs_on_the_first_master_unless_a_monitoring_group_has_hosts():
    assert monitoring().value("__monitoring_server") == "m1"
    assert monitoring().value("__monitoring_is_server", "m1") is True
    assert monitoring().value("__monitoring_is_server", "w1") is False
    renderer = monitoring({**CLUSTER, "monitoring": ["mon1"]})
    assert renderer.value("__monitoring_server") == "mon1"
    assert renderer.value("__monitoring_on_gateway", "mon1") is False
    # It runs node-exporter too, and is scraped with the others.
    assert "mon1" in renderer.value("__monitoring_exporter_hosts")
    assert renderer.value("__monitoring_is_exporter_host", "mon1") is True
    assert monitoring(monitoring_enabled=False).value("__monitoring_is_server", "m1") is False


def test_every_host_is_scraped_on_its_private_address_with_tls_and_a_login():
    conf = config()
    node = jobs(conf)["node"]
    assert targets(node) == {"m1": "10.0.0.1:9100", "w1": "10.0.0.2:9100", "w2": "10.0.0.3:9100",
                             "hub1": "10.0.0.4:9100", "nb1": "10.0.0.9:9100"}
    assert node["scheme"] == "https"
    assert node["tls_config"] == {"ca_file": CA["pki_ca_file"]}
    assert node["basic_auth"] == {"username": "prometheus", "password_file": "/etc/prometheus/secrets/scrape_password"}
    # The Docker hosts run nginx to publish their engine's metrics; theirs is measured too.
    assert targets(jobs(conf)["nginx"]) == {"m1": "10.0.0.1:9113", "hub1": "10.0.0.4:9113", "w1": "10.0.0.2:9113",
                                            "w2": "10.0.0.3:9113"}
    for job in ("nginx", "docker"):
        assert jobs(conf)[job]["scheme"] == "https"
        assert jobs(conf)[job]["tls_config"] == node["tls_config"]
        assert jobs(conf)[job]["basic_auth"] == node["basic_auth"]


def test_the_gpu_exporter_is_scraped_with_tls_and_the_login():
    gpu = jobs(config())["gpu"]
    node = jobs(config())["node"]
    assert targets(gpu) == {"w2": "10.0.0.3:9445"}
    assert gpu["scheme"] == "https"
    assert gpu["tls_config"] == node["tls_config"] == {"ca_file": CA["pki_ca_file"]}
    assert gpu["basic_auth"] == node["basic_auth"]
    assert gpu["basic_auth"] == {"username": "prometheus", "password_file": "/etc/prometheus/secrets/scrape_password"}


def test_spark_docker_hub_and_gpu_targets_follow_the_inventory_groups():
    by_job = jobs(config())
    assert targets(by_job["spark_master"]) == {"m1": "10.0.0.1:8080"}
    assert by_job["spark_master"]["metrics_path"] == "/metrics/master/prometheus"
    assert by_job["spark_applications"]["metrics_path"] == "/metrics/applications/prometheus"
    assert targets(by_job["spark_worker"]) == {"w1": "10.0.0.2:8081", "w2": "10.0.0.3:8081"}
    assert by_job["spark_worker"]["metrics_path"] == "/metrics/prometheus"
    assert targets(by_job["docker"]) == {"hub1": "10.0.0.4:9324", "w1": "10.0.0.2:9324", "w2": "10.0.0.3:9324"}
    assert targets(by_job["gpu"]) == {"w2": "10.0.0.3:9445"}
    assert by_job["gpu"]["metrics_path"] == "/metrics"
    hub = by_job["jupyterhub"]
    assert targets(hub) == {"hub1": "hub1:443"}
    assert (hub["scheme"], hub["metrics_path"]) == ("https", "/hub/metrics")
    assert hub["authorization"] == {"type": "Bearer", "credentials_file": "/etc/prometheus/secrets/jupyterhub_token"}


def test_sparks_jobs_send_the_ui_token_where_spark_asks_for_it():
    spark_jobs = ("spark_master", "spark_applications", "spark_worker")
    # Spark 3.5 (the default spark_version) has no UI login: nothing to send.
    assert [job for job in spark_jobs if "authorization" in jobs(config())[job]] == []
    by_job = jobs(config(monitoring(spark_version="4.0.1")))
    for job in spark_jobs:
        assert by_job[job]["authorization"] == {"type": "Bearer", "credentials_file": "/etc/prometheus/secrets/spark_ui_token"}
    assert "authorization" not in by_job["node"]


def test_a_cluster_without_hub_gpus_or_standalone_spark_has_no_such_jobs():
    groups = {"spark_masters": ["m1"], "spark_workers": ["w1"]}
    by_job = jobs(config(monitoring(groups, spark_cluster_manager="yarn")))
    assert set(by_job) == {"prometheus", "alertmanager", "node", "nginx"}
    by_job = jobs(config(monitoring(groups, monitoring_scrape_spark=False, ui_gateway_port=9443)))
    assert "spark_worker" not in by_job


def test_prometheus_and_alertmanager_are_reached_on_loopback_under_their_prefixes():
    conf = config()
    assert conf["alerting"]["alertmanagers"] == [{"path_prefix": "/alertmanager",
                                                  "static_configs": [{"targets": ["127.0.0.1:9093"]}]}]
    assert jobs(conf)["prometheus"]["metrics_path"] == "/prometheus/metrics"
    assert conf["rule_files"] == ["/etc/prometheus/sparkfleet.rules.yml"]


def test_extra_scrape_configs_and_rule_groups_are_appended_as_given():
    extra = {"job_name": "mine", "static_configs": [{"targets": ["10.1.1.1:9999"]}]}
    group = {"name": "mine", "rules": [{"alert": "Mine", "expr": "vector(1) > 0"}]}
    renderer = monitoring(monitoring_extra_scrape_configs=[extra], monitoring_extra_rule_groups=[group])
    assert jobs(config(renderer))["mine"] == extra
    rules = yaml.safe_load(renderer.render("sparkfleet.rules.yml.j2", "m1"))
    assert rules["groups"][-1] == group


# --- promtool (Debian's prometheus package) -----------------------------------------------------

def promtool():
    """Debian's promtool, or a skip saying why; under CI=true (CI installs it) its absence fails."""
    return debian_tool("promtool", "prometheus")


def _write_rendered(tmp_path, renderer):
    rules = tmp_path / "sparkfleet.rules.yml"
    rules.write_text(renderer.render("sparkfleet.rules.yml.j2", "m1"))
    # promtool check config also reads the files the configuration names.
    for name in ("scrape_password", "jupyterhub_token", "spark_ui_token", "ca.crt"):
        (tmp_path / name).write_text("x\n")
    text = renderer.render("prometheus.yml.j2", "m1")
    text = (text.replace("/etc/prometheus/sparkfleet.rules.yml", str(rules))
            .replace("/etc/prometheus/secrets/", f"{tmp_path}/").replace(CA["pki_ca_file"], str(tmp_path / "ca.crt")))
    conf = tmp_path / "prometheus.yml"
    conf.write_text(text)
    return conf, rules


def test_promtool_accepts_the_rendered_configuration_and_rules(tmp_path):
    tool = promtool()
    conf, rules = _write_rendered(tmp_path, monitoring(spark_version="4.0.1"))
    result = subprocess.run([tool, "check", "config", str(conf)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout and str(rules) in result.stdout


def _alert_test(eval_time, alertname, expected):
    return {"eval_time": eval_time, "alertname": alertname, "exp_alerts": expected}


FS = 'node_filesystem_{kind}_bytes{{job="node",host="{host}",mountpoint="/",fstype="ext4",device="/dev/sda1"}}'


def test_promtool_runs_the_alerts_on_recorded_series(tmp_path):
    tool = promtool()
    _config, rules = _write_rendered(tmp_path, monitoring())
    node_w1 = {"job": "node", "host": "w1", "severity": "critical"}
    disk_labels = {"job": "node", "host": "w1", "mountpoint": "/", "fstype": "ext4", "device": "/dev/sda1",
                   "severity": "warning"}
    tests = {
        "rule_files": [str(rules)],
        "evaluation_interval": "1m",
        "tests": [
            {   # A worker down fires within a minute; a healthy host never does.
                "interval": "1m",
                "input_series": [
                    {"series": 'up{job="node",host="w1"}', "values": "0x10"},
                    {"series": 'up{job="node",host="w2"}', "values": "1x10"},
                ],
                "alert_rule_test": [
                    _alert_test("0m", "HostDown", []),
                    _alert_test("1m", "HostDown", [{"exp_labels": node_w1,
                                                    "exp_annotations": {"summary": "w1 does not answer (node-exporter)"}}]),
                ],
            },
            {   # A disk 90 % full fires; one 50 % full does not.
                "interval": "1m",
                "input_series": [
                    {"series": FS.format(kind="size", host="w1"), "values": "100x20"},
                    {"series": FS.format(kind="avail", host="w1"), "values": "10x20"},
                    {"series": FS.format(kind="size", host="w2"), "values": "100x20"},
                    {"series": FS.format(kind="avail", host="w2"), "values": "50x20"},
                ],
                "alert_rule_test": [
                    _alert_test("10m", "DiskAlmostFull", [{"exp_labels": disk_labels,
                                                           "exp_annotations": {"summary": "/ on w1 is 90% full"}}]),
                ],
            },
            {   # A worker the master knows but not ALIVE; a GPU's Xid; pending notebook tasks.
                "interval": "1m",
                "input_series": [
                    {"series": 'metrics_master_workers_Value{job="spark_master",host="m1",type="gauges"}', "values": "2x10"},
                    {"series": 'metrics_master_aliveWorkers_Value{job="spark_master",host="m1",type="gauges"}',
                     "values": "2 2 1x8"},
                    {"series": 'sparkfleet_gpu_xid_errors_total{job="gpu",host="w2",gpu="0",xid="79"}', "values": "0 0 1x8"},
                    {"series": 'sparkfleet_gpu_xid_errors_total{job="gpu",host="w2",gpu="1",xid="79"}', "values": "0x10"},
                    {"series": 'swarm_manager_tasks_total{job="docker",host="hub1",state="pending"}', "values": "0x5 1x20"},
                    # The gpu_exporter role's ECC counters: uncorrected on GPU 0 since the driver loaded.
                    {"series": 'sparkfleet_gpu_ecc_errors_total{job="gpu",host="w2",gpu="0",error="uncorrected",'
                               'counter="volatile"}', "values": "0 0 2x8"},
                    {"series": 'sparkfleet_gpu_ecc_errors_total{job="gpu",host="w2",gpu="0",error="corrected",'
                               'counter="volatile"}', "values": "5x10"},
                ],
                "alert_rule_test": [
                    _alert_test("1m", "SparkWorkerNotAlive", []),
                    _alert_test("4m", "SparkWorkerNotAlive", [{"exp_labels": {
                        "job": "spark_master", "host": "m1", "type": "gauges", "severity": "warning"},
                        "exp_annotations": {"summary": "1 Spark worker(s) registered with the master on m1 are not ALIVE"}}]),
                    _alert_test("4m", "GpuXidErrors", [{"exp_labels": {
                        "job": "gpu", "host": "w2", "gpu": "0", "xid": "79", "severity": "critical"},
                        "exp_annotations": {"summary": "GPU 0 on w2 reported Xid 79"}}]),
                    _alert_test("1m", "GpuEccErrors", []),
                    _alert_test("3m", "GpuEccErrors", [{"exp_labels": {
                        "job": "gpu", "host": "w2", "gpu": "0", "error": "uncorrected", "counter": "volatile",
                        "severity": "critical"},
                        "exp_annotations": {"summary": "GPU 0 on w2 has uncorrectable ECC errors"}}]),
                    _alert_test("10m", "NotebooksPending", []),
                    _alert_test("16m", "NotebooksPending", [{
                        "exp_labels": {"job": "docker", "severity": "warning"},
                        "exp_annotations": {"summary": "1 Swarm task(s) pending: no node has the GPU shares, cores or memory they ask for"}}]),
                ],
            },
        ],
    }
    spec = tmp_path / "rules_test.yml"
    spec.write_text(yaml.safe_dump(tests, sort_keys=False))
    result = subprocess.run([tool, "test", "rules", str(spec)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


# --- The owners' switches: each role turns its own metrics on with monitoring_enabled -------------

def test_docker_metrics_listen_on_the_loopback_only_while_monitored():
    docker = RoleRenderer("docker", CLUSTER, hostvars=HOSTVARS)
    assert docker.value("__docker_metrics_settings", "w1") == {"metrics-addr": "127.0.0.1:9323"}
    off = RoleRenderer("docker", CLUSTER, hostvars=HOSTVARS, extra={"monitoring_enabled": False})
    assert off.value("__docker_metrics_settings", "w1") == {}


def test_the_monitoring_host_may_reach_the_spark_ui_ports():
    hostvars = {**HOSTVARS, "mon1": {"ansible_facts": {**facts(address="10.0.0.7"), "all_ipv4_addresses": ["10.0.0.7"]}}}
    for host in ("m1", "w1", "w2"):
        hostvars[host] = {"ansible_facts": {**hostvars[host]["ansible_facts"],
                                            "all_ipv4_addresses": [hostvars[host]["ansible_facts"]["default_ipv4"]["address"]]}}
    groups = {**CLUSTER, "monitoring": ["mon1"]}
    allowed = RoleRenderer("ui_gateway", groups, hostvars=hostvars).value("__ui_gateway_allowed_v4", "w1")
    assert "10.0.0.7" in allowed and "10.0.0.2" in allowed
    off = RoleRenderer("ui_gateway", groups, hostvars=hostvars, extra={"monitoring_enabled": False})
    assert "10.0.0.7" not in off.value("__ui_gateway_allowed_v4", "w1")


def test_the_gateway_locations_pass_the_prefix_on_and_not_the_login():
    text = monitoring().render("ui-gateway-monitoring.conf.j2", "m1")
    code = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert code == ["location /prometheus/ {", "proxy_pass http://127.0.0.1:9090;", 'proxy_set_header Authorization "";', "}",
                    "location /alertmanager/ {", "proxy_pass http://127.0.0.1:9093;", 'proxy_set_header Authorization "";', "}"]
    assert monitoring().value("__monitoring_on_gateway", "m1") is True
    assert monitoring(ui_gateway_enabled=False).value("__monitoring_on_gateway", "m1") is False
    args = monitoring().value("__monitoring_prometheus_args", "m1")
    assert "--web.listen-address=127.0.0.1:9090" in args and "--web.route-prefix=/prometheus" in args
    assert "--web.external-url=https://10.0.0.1:8443/prometheus/" in args
    assert "--cluster.listen-address=" in monitoring().value("__monitoring_alertmanager_args", "m1")


# --- nginx's metrics site and the gateway's locations in a real nginx --------------------------------

class _Upstream(http.server.BaseHTTPRequestHandler):
    """The exporter and Prometheus: answers every GET with the path and the Authorization it got."""

    def do_GET(self):  # pylint: disable=invalid-name
        body = f"{self.path} {self.headers.get('Authorization', '-')}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args):  # pylint: disable=redefined-builtin
        pass


def _get(port, path, auth=None, context=None):
    connection = (http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10) if context
                  else http.client.HTTPConnection("127.0.0.1", port, timeout=10))
    headers = {"Authorization": "Basic " + base64.b64encode(auth.encode()).decode()} if auth else {}
    connection.request("GET", path, headers=headers)
    response = connection.getresponse()
    body = response.read().decode()
    connection.close()
    return response.status, body


def test_the_real_nginx_serves_the_metrics_with_the_login_and_the_uis_under_their_prefix(tmp_path):
    binary = debian_tool("nginx", "nginx-light")
    upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Upstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-days", "1",
                    "-keyout", str(tmp_path / "m.key"), "-out", str(tmp_path / "m.crt")], check=True, capture_output=True)
    hashed = subprocess.run(["openssl", "passwd", "-6", "-stdin"], input="scrape-pw", text=True, capture_output=True,
                            check=True).stdout.strip()
    (tmp_path / "htpasswd").write_text(f"prometheus:{hashed}\n")
    metrics_port, status_port, gateway_port, docker_port = free_port(), free_port(), free_port(), free_port()
    renderer = monitoring(monitoring_listen_address="127.0.0.1", monitoring_nginx_metrics_port=metrics_port,
                          monitoring_nginx_status_port=status_port,
                          monitoring_nginx_exporter_port=upstream.server_address[1],
                          monitoring_prometheus_port=upstream.server_address[1],
                          monitoring_docker_metrics_port=docker_port, docker_metrics_port=upstream.server_address[1],
                          __monitoring_nginx_htpasswd=str(tmp_path / "htpasswd"),
                          __monitoring_tls={"certificate": str(tmp_path / "m.crt"), "key": str(tmp_path / "m.key")})
    # The master is no Docker host: its site has no Docker server. The hub's has, beside nginx's.
    assert f":{docker_port} ssl" not in renderer.render("nginx-metrics.conf.j2", "m1")
    (tmp_path / "metrics.conf").write_text(renderer.render("nginx-metrics.conf.j2", "hub1"))
    (tmp_path / "locations.conf").write_text(renderer.render("ui-gateway-monitoring.conf.j2", "m1"))
    write_nginx_conf(tmp_path, f"""\
    include {tmp_path}/metrics.conf;
    # The gateway's server as ui_gateway renders it: the login for the whole server, then the locations.
    server {{
        listen 127.0.0.1:{gateway_port};
        auth_basic "gateway";
        auth_basic_user_file {tmp_path}/htpasswd;
        include {tmp_path}/locations.conf;
    }}
""")
    try:
        with running_nginx(binary, tmp_path, metrics_port):
            context = ssl.create_default_context(cafile=str(tmp_path / "m.crt"))
            assert _get(metrics_port, "/metrics", context=context)[0] == 401
            assert _get(metrics_port, "/metrics", "prometheus:wrong", context=context)[0] == 401
            # The exporter gets the request, and not the login.
            assert _get(metrics_port, "/metrics", "prometheus:scrape-pw", context=context) == (200, "/metrics -")
            assert _get(metrics_port, "/other", "prometheus:scrape-pw", context=context)[0] == 404
            # The Docker engine's metrics (its loopback port) the same way.
            assert _get(docker_port, "/metrics", context=context)[0] == 401
            assert _get(docker_port, "/metrics", "prometheus:wrong", context=context)[0] == 401
            assert _get(docker_port, "/metrics", "prometheus:scrape-pw", context=context) == (200, "/metrics -")
            assert _get(docker_port, "/other", "prometheus:scrape-pw", context=context)[0] == 404
            status, body = _get(status_port, "/stub_status")
            assert status == 200 and body.startswith("Active connections:")
            assert _get(gateway_port, "/prometheus/graph")[0] == 401
            assert _get(gateway_port, "/prometheus/graph", "prometheus:scrape-pw") == (200, "/prometheus/graph -")
    finally:
        upstream.shutdown()


def test_the_exporters_certificate_names_addresses_only():
    """A worker added after the cluster CA was made (scale.yml, the autoscaler) may have a name outside
    the CA's name constraints; addresses are outside them, and Prometheus's targets are addresses."""
    assert monitoring().value("__monitoring_tls_sans", "w1") == ["IP:10.0.0.2"]
