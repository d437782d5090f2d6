"""playbooks/status.yml: read-only by construction, and an unreachable cluster is reported in
the table, not a failed run."""

import http.server
import os
import pathlib
import socket
import subprocess
import sys
import threading

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
PLAYBOOK = ROOT / "playbooks" / "status.yml"
READ_ONLY = {"ansible.builtin.service_facts", "ansible.builtin.meta", "ansible.builtin.uri",
             "sparkfleet.cluster.nvidia_gpu_facts", "sparkfleet.cluster.spark_ui", "ansible.builtin.command",
             "ansible.builtin.debug"}


def _plays():
    return yaml.safe_load(PLAYBOOK.read_text())


def _tasks():
    for play in _plays():
        yield from play.get("tasks", [])


def test_only_reading_modules():
    for task in _tasks():
        modules = {key for key in task if "." in key}
        assert modules <= READ_ONLY, f"{task['name']}: {modules - READ_ONLY}"
        if "ansible.builtin.command" in modules:
            assert task.get("changed_when") is False and task.get("check_mode") is False
        if "ansible.builtin.uri" in modules:
            assert task["ansible.builtin.uri"].get("method", "GET") == "GET"


def test_hosts_play_survives_unreachable_hosts_and_gathers_nothing():
    hosts_play = _plays()[0]
    assert hosts_play["hosts"] == "all"
    assert hosts_play["ignore_unreachable"] is True
    assert hosts_play["gather_facts"] is False
    assert hosts_play["become"] is False


def _closed_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


ANSIBLE_PLAYBOOK = pathlib.Path(sys.executable).parent / "ansible-playbook"
needs_ansible_playbook = pytest.mark.skipif(not ANSIBLE_PLAYBOOK.exists(),
                                            reason="ansible-playbook is not installed beside this Python")


def _unreachable_vars():
    """Host variables of a host Ansible cannot reach: SSH to a closed port of this machine."""
    return {"ansible_host": "127.0.0.1", "ansible_port": _closed_port(), "ansible_user": "nobody",
            "ansible_connection": "ssh",
            "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"}


def _run_status(tmp_path, inventory, *args, path=None):
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    env = dict(os.environ, ANSIBLE_CONFIG=str(tmp_path / "none.cfg"), ANSIBLE_FORCE_COLOR="0", ANSIBLE_CALLBACK_RESULT_FORMAT="yaml",
               ANSIBLE_COLLECTIONS_PATH=str(ROOT / "collections"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_INVENTORY_UNPARSED_WARNING="false")
    if path:
        env["PATH"] = f"{path}{os.pathsep}{env['PATH']}"
    (tmp_path / "none.cfg").write_text("[defaults]\n")
    done = subprocess.run([str(ANSIBLE_PLAYBOOK), "-i", str(tmp_path / "hosts.yml"), str(PLAYBOOK), *args],
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    return done


@needs_ansible_playbook
@pytest.mark.parametrize("masters", [["m1"], ["m1", "m2"]], ids=["one master", "two masters (HA)"])
def test_unreachable_hosts_are_reported_and_the_run_succeeds(tmp_path, masters):
    done = _run_status(tmp_path, {"all": {
        "vars": _unreachable_vars(),
        "children": {
            "spark_masters": {"hosts": dict.fromkeys(masters)},
            "spark_workers": {"hosts": {"w1": None, "w2": None}},
        }}})
    # The table is the debug message, a YAML block (result_format yaml), so indented.
    table = [line.strip() for line in done.stdout.splitlines()
             if line.startswith("    ") and line.strip().startswith(("host ", "m1 ", "m2 ", "w1 ", "w2 "))]
    assert len(table) == 3 + len(masters), done.stdout[-3000:]
    assert table[0].split() == ["host", "groups", "reachable", "spark", "worker", "gpus", "swarm", "services", "what",
                                "is", "wrong"]
    assert table[1].split()[:3] == ["m1", "(spark_masters)", "NO"]
    for line in table[1:]:
        assert "  NO  " in line and "unreachable over SSH: connect to host 127.0.0.1" in line
    assert "Swarm: no host in swarm_managers, not checked." in done.stdout
    # The monitoring host (no monitoring group: the first master) is one of them.
    assert "alerts: Alertmanager on m1 did not answer: m1 is unreachable over SSH" in done.stdout


ALERTS = ROOT / "tests" / "unit" / "plugins" / "filter" / "fixtures" / "alertmanager" / "alerts.json"


@pytest.fixture
def alertmanager():
    """A stand-in for Alertmanager on this machine's loopback, under its route prefix /alertmanager: it
    answers the recorded alerts (tests/unit/plugins/filter/fixtures/alertmanager) and keeps the paths asked."""
    asked = []
    body = ALERTS.read_bytes()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # pylint: disable=invalid-name
            asked.append(self.path)
            found = self.path.split("?", 1)[0] == "/alertmanager/api/v2/alerts"
            self.send_response(200 if found else 404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body if found else b"{}")

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], asked
    server.shutdown()
    server.server_close()


def _monitored_cluster(tmp_path, alertmanager_port):
    """mon, the monitoring host, and w3 run here (local connection; a systemctl that reports
    systemd-journald up, as status asks it), w2 is unreachable. w3's address is the one the recorded
    LoadHigh alert names as its instance."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "systemctl").write_text(
        "#!/bin/sh\nfor unit in \"$@\"; do case $unit in *.service)\n"
        "  printf 'Id=%s\\nLoadState=loaded\\nActiveState=active\\nSubState=running\\n\\n' \"$unit\";; esac; done\n")
    (bin_dir / "systemctl").chmod(0o755)
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    inventory = {"all": {
        "vars": {"monitoring_alertmanager_port": alertmanager_port},
        "children": {
            "monitoring": {"hosts": {"mon": local}},
            "spark_workers": {"hosts": {"w2": _unreachable_vars(), "w3": dict(local, ansible_host="10.0.0.13")}},
        }}}
    return inventory, bin_dir


def _table_row(stdout, host):
    return next(line.strip() for line in stdout.splitlines() if line.strip().startswith(host + " "))


@needs_ansible_playbook
def test_the_alerts_that_fire_are_listed_and_are_their_hosts_problems(tmp_path, alertmanager):
    port, asked = alertmanager
    inventory, bin_dir = _monitored_cluster(tmp_path, port)
    done = _run_status(tmp_path, inventory, path=bin_dir)
    assert asked == ["/alertmanager/api/v2/alerts?active=true&silenced=false&inhibited=false"]
    assert "alerts: 6 firing (Alertmanager on mon):" in done.stdout
    listed = [line.split()[:3] for line in done.stdout.splitlines()
              if line.strip().startswith(("HostDown ", "GpuXidErrors ", "NotebooksPending ", "LoadHigh "))]
    assert listed == [["HostDown", "critical", "w2"], ["GpuXidErrors", "critical", "gpu1"],
                      ["NotebooksPending", "warning", "-"], ["LoadHigh", "info", "w3"]]
    assert "alert HostDown (critical): w2 does not answer (node-exporter)" in _table_row(done.stdout, "w2")
    assert "unreachable over SSH" in _table_row(done.stdout, "w2")
    assert _table_row(done.stdout, "w3").endswith("alert LoadHigh (info): Load on 10.0.0.13:9100 is above its cores for 15m")
    assert _table_row(done.stdout, "mon").endswith("  ok")


@needs_ansible_playbook
def test_an_alertmanager_that_does_not_answer_is_said_and_the_run_succeeds(tmp_path):
    inventory, bin_dir = _monitored_cluster(tmp_path, _closed_port())
    done = _run_status(tmp_path, inventory, path=bin_dir)
    assert "alerts: Alertmanager on mon did not answer: <urlopen error [Errno 111] Connection refused>" in done.stdout
    assert _table_row(done.stdout, "w3").endswith("  ok")


@needs_ansible_playbook
def test_monitoring_off_asks_no_alertmanager(tmp_path, alertmanager):
    port, asked = alertmanager
    inventory, bin_dir = _monitored_cluster(tmp_path, port)
    done = _run_status(tmp_path, inventory, "-e", "monitoring_enabled=false", path=bin_dir)
    assert asked == []
    assert "alerts: monitoring off (monitoring_enabled)" in done.stdout
    assert "alert " not in _table_row(done.stdout, "w2")
