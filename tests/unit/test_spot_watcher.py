"""The spot watcher (roles/spot_watcher/files/sparkfleet_spot_watcher.py) against stand-in metadata
servers of GCP's and AWS's shapes (http.server, here): on the notice it runs its commands, in
order, before the deadline, and once."""

import datetime
import importlib.util
import http.server
import json
import shlex
import subprocess
import sys
import threading
import time

import pytest
import yaml

from conftest import ROOT, RoleRenderer

SCRIPT = ROOT / "roles" / "spot_watcher" / "files" / "sparkfleet_spot_watcher.py"


class _Metadata(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, handler):
        super().__init__(("127.0.0.1", 0), handler)
        self.preempted = False
        self.changed = threading.Condition()
        self.action = None  # AWS: {"action", "time"} once announced
        self.asked = []  # (method, path, headers) of every request

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server_address[1]}"

    def preempt(self, action=None):
        with self.changed:
            self.preempted, self.action = True, action
            self.changed.notify_all()


class _Gcp(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):  # quiet
        pass

    def do_GET(self):  # noqa: N802  (http.server's name)
        server = self.server
        server.asked.append(("GET", self.path, {k.lower(): v for k, v in self.headers.items()}))
        if self.headers.get("Metadata-Flavor") != "Google":
            self.send_error(403, "Missing Metadata-Flavor:Google header.")
            return
        if not self.path.startswith("/computeMetadata/v1/instance/preempted"):
            self.send_error(404)
            return
        if "wait_for_change=true" in self.path:
            with server.changed:
                server.changed.wait_for(lambda: server.preempted, timeout=20)
        body = b"TRUE" if server.preempted else b"FALSE"
        self.send_response(200)
        self.send_header("ETag", "e2" if server.preempted else "e1")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Aws(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_PUT(self):  # noqa: N802
        self.server.asked.append(("PUT", self.path, {k.lower(): v for k, v in self.headers.items()}))
        if self.path != "/latest/api/token" or not self.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
            self.send_error(400)
            return
        self.send_response(200)
        self.send_header("Content-Length", "5")
        self.end_headers()
        self.wfile.write(b"token")

    def do_GET(self):  # noqa: N802
        self.server.asked.append(("GET", self.path, {k.lower(): v for k, v in self.headers.items()}))
        # IMDSv2 only (provision sets http_tokens: required): no token, 401.
        if self.headers.get("X-aws-ec2-metadata-token") != "token":
            self.send_error(401)
            return
        if self.path != "/latest/meta-data/spot/instance-action" or not self.server.action:
            self.send_error(404)
            return
        body = json.dumps(self.server.action).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(name="serve")
def _serve():
    servers = []

    def start(handler):
        server = _Metadata(handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _watcher(tmp_path, provider, url, *commands):
    """The watcher as systemd runs it, with commands that note when they ran."""
    argv = [sys.executable, str(SCRIPT), "--provider", provider, "--metadata-url", url,
            "--marker", str(tmp_path / "notice.json"), "--poll", "0.2"]
    for name in commands:
        argv += ["--command", f"{sys.executable} -c \"import time; open('{tmp_path}/ran', 'a').write('{name} %f\\n' % time.time())\""]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _ran(tmp_path):
    path = tmp_path / "ran"
    return [(name, float(at)) for name, at in (line.split() for line in path.read_text().splitlines())] if path.exists() else []


def test_gcp_notice_runs_the_commands_in_order_within_30_seconds(tmp_path, serve):
    server = serve(_Gcp)
    proc = _watcher(tmp_path, "gcp", f"{server.url}/computeMetadata/v1", "decommission", "leave-swarm", "replace")
    time.sleep(1.0)
    assert proc.poll() is None and _ran(tmp_path) == []  # no notice, nothing done
    noticed = time.time()
    server.preempt()
    out, _err = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    ran = _ran(tmp_path)
    assert [name for name, _at in ran] == ["decommission", "leave-swarm", "replace"]
    assert all(noticed <= at < noticed + 30 for _name, at in ran)
    # Every question carried the header, and the ones after the first waited for a change of the value seen.
    assert all(h.get("metadata-flavor") == "Google" for _method, _path, h in server.asked)
    assert "wait_for_change" not in server.asked[0][1]
    assert any("wait_for_change=true" in p and "last_etag=e1" in p for _method, p, _headers in server.asked[1:])
    marker = json.loads((tmp_path / "notice.json").read_text())
    assert marker["deadline"] == pytest.approx(marker["noticed"] + 30)


def test_aws_notice_runs_the_commands_before_the_announced_time(tmp_path, serve):
    server = serve(_Aws)
    proc = _watcher(tmp_path, "aws", server.url, "decommission", "leave-swarm")
    time.sleep(1.0)
    assert proc.poll() is None and _ran(tmp_path) == []
    when = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0) + datetime.timedelta(seconds=120)
    server.preempt({"action": "terminate", "time": when.strftime("%Y-%m-%dT%H:%M:%SZ")})
    out, _err = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    ran = _ran(tmp_path)
    assert [name for name, _at in ran] == ["decommission", "leave-swarm"]
    assert all(at < when.timestamp() for _name, at in ran)
    # IMDSv2: a token first, and the notice asked with it (the stand-in answers 401 without).
    assert server.asked[0][:2] == ("PUT", "/latest/api/token")
    gets = [h for m, p, h in server.asked if m == "GET"]
    assert gets and all(h.get("x-aws-ec2-metadata-token") == "token" for h in gets)
    assert json.loads((tmp_path / "notice.json").read_text())["deadline"] == when.timestamp()


def test_a_restarted_watcher_does_not_hand_over_twice(tmp_path, serve):
    server = serve(_Gcp)
    server.preempt()
    first = _watcher(tmp_path, "gcp", f"{server.url}/computeMetadata/v1", "decommission")
    first.communicate(timeout=30)
    again = _watcher(tmp_path, "gcp", f"{server.url}/computeMetadata/v1", "decommission")
    out, _err = again.communicate(timeout=30)
    assert again.returncode == 0
    assert "handled already" in out
    assert [name for name, _at in _ran(tmp_path)] == ["decommission"]


def test_a_command_past_the_deadline_is_stopped_and_the_next_still_runs(tmp_path):
    watcher = load_plugin_script()
    start = time.time()
    results = watcher.run_commands(["sleep 30", f"touch {tmp_path}/left"], deadline=start + 2)
    assert results == [("sleep 30", "timeout"), (f"touch {tmp_path}/left", 0)]
    assert (tmp_path / "left").exists()
    assert time.time() - start < 10


def test_an_unreachable_metadata_server_is_not_a_notice(tmp_path):
    watcher = load_plugin_script()
    result = watcher.watch("aws", "http://127.0.0.1:9", ["touch x"], str(tmp_path / "m"), once=True)
    assert result is None
    assert not (tmp_path / "m").exists()


def load_plugin_script():
    import importlib.util  # pylint: disable=import-outside-toplevel

    spec = importlib.util.spec_from_file_location("sparkfleet_spot_watcher", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Worker(http.server.BaseHTTPRequestHandler):
    """A Spark worker's /json/: its executors leave once it got SIGPWR (the fake systemctl's log)."""

    def log_message(self, *args):
        pass

    def do_GET(self):  # noqa: N802
        signalled = "--signal=SIGPWR" in (self.server.calls.read_text() if self.server.calls.exists() else "")
        body = json.dumps({"executors": [] if signalled else [{"appid": "app-1", "id": 0}]}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _fake_host(tmp_path, sigcgt):
    """A systemctl that logs its arguments and names PID 4242 as spark-worker's, and that PID's status."""
    calls = tmp_path / "systemctl.log"
    systemctl = tmp_path / "systemctl"
    systemctl.write_text(f"#!/bin/sh\necho \"$@\" >> {calls}\n[ \"$1\" = show ] && echo 4242\nexit 0\n")
    systemctl.chmod(0o755)
    (tmp_path / "proc" / "4242").mkdir(parents=True)
    (tmp_path / "proc" / "4242" / "status").write_text(f"Name:\tjava\nSigCgt:\t{sigcgt}\n")
    return systemctl, calls


@pytest.mark.parametrize("sigcgt, signalled", [("0000000020004a02", True), ("0000000000004a02", False)])
def test_the_spark_worker_is_decommissioned_only_when_it_handles_sigpwr(tmp_path, serve, sigcgt, signalled):
    systemctl, calls = _fake_host(tmp_path, sigcgt)
    worker = serve(_Worker)
    worker.calls = calls
    gcp = serve(_Gcp)
    gcp.preempt()
    argv = [sys.executable, str(SCRIPT), "--provider", "gcp", "--metadata-url", f"{gcp.url}/computeMetadata/v1",
            "--marker", str(tmp_path / "notice.json"), "--spark-worker-json", f"{worker.url}/json/",
            "--systemctl", str(systemctl), "--proc", str(tmp_path / "proc"),
            "--command", f"{sys.executable} -c \"open('{tmp_path}/after', 'w').write(open('{calls}').read())\""]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True).stdout
    kills = [line for line in calls.read_text().splitlines() if line.startswith("kill")]
    # SIGPWR kills a JVM that does not handle it: sent only when SigCgt has bit 30.
    assert kills == (["kill --kill-who=main --signal=SIGPWR spark-worker"] if signalled else [])
    assert ("no executor left" in out) == signalled
    # The commands (leave the Swarm...) ran after the decommission's signal.
    assert (tmp_path / "after").read_text() == calls.read_text()


class _BusyWorker(http.server.BaseHTTPRequestHandler):
    """A Spark worker whose executors do not leave before the deadline."""

    def log_message(self, *args):
        pass

    def do_GET(self):  # noqa: N802
        body = json.dumps({"executors": [{"appid": "app-1", "id": 0}]}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_the_commands_do_not_wait_for_the_executors_to_leave(tmp_path, serve):
    """Leaving the Swarm moves the notebooks at once: the commands run right after the signal, and
    the wait for the executors takes what is left of the notice."""
    systemctl, _calls = _fake_host(tmp_path, "0000000020004a02")
    worker = serve(_BusyWorker)
    aws = serve(_Aws)
    when = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0) + datetime.timedelta(seconds=4)
    aws.preempt({"action": "terminate", "time": when.strftime("%Y-%m-%dT%H:%M:%SZ")})
    argv = [sys.executable, str(SCRIPT), "--provider", "aws", "--metadata-url", aws.url,
            "--marker", str(tmp_path / "notice.json"), "--spark-worker-json", f"{worker.url}/json/",
            "--systemctl", str(systemctl), "--proc", str(tmp_path / "proc"),
            "--command", f"{sys.executable} -c \"import time; open('{tmp_path}/ran', 'w').write(str(time.time()))\""]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True).stdout
    noticed = json.loads((tmp_path / "notice.json").read_text())["noticed"]
    assert float((tmp_path / "ran").read_text()) - noticed < 2
    assert "the deadline came first" in out
    assert time.time() >= when.timestamp()


def _unit_vars():
    """The service role's inputs as roles/spot_watcher/tasks/main.yml passes them."""
    tasks = yaml.safe_load((ROOT / "roles" / "spot_watcher" / "tasks" / "main.yml").read_text())
    (include,) = [t for t in tasks if "ansible.builtin.include_role" in t]
    return include["vars"]


GROUPS = {"role_worker": ["c-worker-1"], "role_gpu_worker": ["c-gpu-worker-1"], "role_hub": ["c-hub"],
          "spark_workers": ["c-worker-1", "c-gpu-worker-1"], "swarm_workers": ["c-worker-1", "c-gpu-worker-1"],
          "gpu_workers": ["c-gpu-worker-1"]}


def _renderer(spot_roles):
    hostvars = {h: {"group_names": sorted(g for g, members in GROUPS.items() if h in members)}
                for h in ("c-worker-1", "c-gpu-worker-1", "c-hub")}
    return RoleRenderer("spot_watcher", groups=GROUPS, hostvars=hostvars,
                        extra={"provision_spot_roles": spot_roles, "sparkfleet_provision_provider": "aws", **_unit_vars()})


def test_the_watcher_runs_on_the_machines_of_the_spot_roles_only():
    renderer = _renderer(["gpu_worker"])
    assert [h for h in ("c-worker-1", "c-gpu-worker-1", "c-hub") if renderer.value("spot_watcher_enabled | bool", h)] == [
        "c-gpu-worker-1"]
    assert not _renderer([]).value("spot_watcher_enabled | bool", "c-gpu-worker-1")


def test_the_unit_runs_the_watcher_with_the_decommission_and_the_commands():
    renderer = _renderer(["gpu_worker"])
    (unit,) = renderer.string(_unit_vars()["service_units"], "c-gpu-worker-1")
    # systemd splits ExecStart as a shell does for quotes.
    argv = shlex.split(unit["exec_start"])
    assert argv == ["/usr/bin/python3", "/usr/local/lib/sparkfleet/sparkfleet_spot_watcher.py", "--provider", "aws",
                    "--spark-worker-json", "http://c-gpu-worker-1:8081/json/",
                    "--spark-ui-token-file", "/etc/sparkfleet/spark-ui-token", "--command", "docker swarm leave"]
    renderer.extra["spot_watcher_metadata_url"] = "http://10.0.0.9:8000"
    (unit,) = renderer.string(_unit_vars()["service_units"], "c-gpu-worker-1")
    assert shlex.split(unit["exec_start"])[4:6] == ["--metadata-url", "http://10.0.0.9:8000"]
    for changed, restart in ((False, []), (True, ["sparkfleet-spot-watcher"])):
        renderer.extra["__spot_watcher_script"] = {"changed": changed}
        assert renderer.string(_unit_vars()["service_restart"], "c-gpu-worker-1") == restart


class _LockedWorker(_BusyWorker):
    """A Spark 4 worker behind JWSFilter: 403 without the cluster's token."""

    def do_GET(self):  # noqa: N802
        if self.headers.get("Authorization") != "Bearer t0ken":
            self.send_error(403)
            return
        super().do_GET()


def test_the_worker_is_read_with_the_token_the_spark_role_keeps(tmp_path, serve):
    spec = importlib.util.spec_from_file_location("sparkfleet_spot_watcher", SCRIPT)
    watcher = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(watcher)
    worker = serve(_LockedWorker)
    token = tmp_path / "spark-ui-token"
    token.write_text("t0ken\n")
    assert watcher._executors(f"{worker.url}/json/", str(token)) == 1
    assert watcher._executors(f"{worker.url}/json/", str(tmp_path / "absent")) is None
