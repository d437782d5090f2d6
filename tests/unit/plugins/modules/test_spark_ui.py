"""spark_ui: Spark's UIs read with the token from the host's file, several masters in one call."""

import http.server
import json
import threading

import pytest
from ansible.module_utils.testing import patch_module_args

from conftest import load_plugin

spark_ui = load_plugin("modules", "spark_ui")


class Ui(http.server.BaseHTTPRequestHandler):
    """A Spark UI behind JWSFilter: 403 without the right bearer token, else the server's JSON."""

    def do_GET(self):  # noqa: N802 - http.server's name
        if self.headers.get("Authorization") != f"Bearer {self.server.token}":
            self.send_error(403)
            return
        body = json.dumps(self.server.answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def ui():
    servers = []

    def start(answer, token="t0ken"):
        server = http.server.HTTPServer(("127.0.0.1", 0), Ui)
        server.answer, server.token = answer, token
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_port}/json/"

    yield start
    for server in servers:
        server.shutdown()


def run(args, capsys):
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            spark_ui.main()
    return json.loads(capsys.readouterr().out)


def test_the_token_from_the_file_opens_the_ui(ui, tmp_path, capsys):
    url = ui({"status": "ALIVE", "workers": []})
    token = tmp_path / "token"
    token.write_text("t0ken\n")
    result = run({"url": url, "token_file": str(token)}, capsys)
    alive = {"status": "ALIVE", "workers": []}
    assert (result["status"], result["json"], result["leader"]) == (200, alive, alive)
    assert not result["changed"]
    assert "t0ken" not in json.dumps(result)


def test_without_the_file_or_with_another_token_the_ui_refuses(ui, tmp_path, capsys):
    url = ui({"status": "ALIVE"})
    result = run({"url": url, "token_file": str(tmp_path / "absent")}, capsys)
    assert (result["status"], result["json"], result["leader"]) == (403, {}, {})
    assert result["failed"] and result["msg"] == f"no Spark UI answered: {url}: HTTP 403"
    wrong = tmp_path / "wrong"
    wrong.write_text("other")
    assert run({"url": url, "token_file": str(wrong)}, capsys)["status"] == 403


def test_the_leader_among_several_masters_and_one_that_does_not_answer(ui, tmp_path, capsys):
    token = tmp_path / "token"
    token.write_text("t0ken")
    standby = ui({"status": "STANDBY"})
    leader = ui({"status": "ALIVE", "workers": [{"host": "w1", "state": "ALIVE"}]})
    result = run({"urls": ["http://127.0.0.1:1/json/", standby, leader], "token_file": str(token)}, capsys)
    assert result["status"] == -1 and result["json"] == {}
    assert [a["status"] for a in result["answers"]] == [-1, 200, 200]
    assert not result.get("failed")
    assert result["leader"]["workers"] == [{"host": "w1", "state": "ALIVE"}]


def test_an_unreadable_token_file_fails_and_says_so(tmp_path, capsys):
    result = run({"url": "http://127.0.0.1:1/json/", "token_file": str(tmp_path)}, capsys)
    assert result["failed"] and "cannot read the Spark UI token" in result["msg"]


def test_the_units_state_comes_with_the_answer(ui, tmp_path, capsys, monkeypatch):
    systemctl = tmp_path / "systemctl"
    systemctl.write_text("#!/bin/sh\nprintf 'ActiveState=activating\\nSubState=auto-restart\\nExecMainStatus=1\\n'\n")
    systemctl.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    result = run({"url": ui({"status": "ALIVE"}), "token_file": str(tmp_path / "absent"), "unit": "spark-worker"},
                 capsys)
    assert result["unit"] == {"ActiveState": "activating", "SubState": "auto-restart", "ExecMainStatus": "1"}
