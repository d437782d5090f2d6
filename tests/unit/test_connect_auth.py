"""The caller check nginx asks before each Spark Connect call (roles/spark/files/connect_auth.py),
over real HTTP: a stand-in hub answers /hub/api/user as JupyterHub does for its tokens."""

import hashlib
import http.server
import importlib.util
import json
import threading
import time
import urllib.error
import urllib.request

import pytest

from conftest import ROOT

spec = importlib.util.spec_from_file_location("connect_auth", ROOT / "roles" / "spark" / "files" / "connect_auth.py")
connect_auth = importlib.util.module_from_spec(spec)
spec.loader.exec_module(connect_auth)

CLUSTER_TOKEN = "cluster-connect-token"
# token -> the hub's model of its owner
HUB_TOKENS = {
    "alice-server-token": {"kind": "user", "name": "alice"},
    "culler-token": {"kind": "service", "name": "jupyterhub-idle-culler"},
}


class StandInHub(http.server.BaseHTTPRequestHandler):
    asked = []

    def do_GET(self):  # noqa: N802
        scheme, _sep, token = self.headers.get("Authorization", "").partition(" ")
        StandInHub.asked.append(token)
        if self.path != "/hub/api/user" or scheme != "token" or token not in HUB_TOKENS:
            self.send_response(403)
            self.end_headers()
            return
        body = json.dumps(HUB_TOKENS[token]).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def serve(handler):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture()
def hub():
    StandInHub.asked = []
    server = serve(StandInHub)
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def check(verifier, authorization):
    """(status, verified user) from the check's HTTP endpoint, as nginx's auth_request sees it."""
    server = serve(connect_auth.handler_for(verifier))
    try:
        request = urllib.request.Request(f"http://127.0.0.1:{server.server_address[1]}/verify")
        if authorization is not None:
            request.add_header("Authorization", authorization)
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                return response.status, response.headers.get("X-Sparkfleet-User")
        except urllib.error.HTTPError as err:
            return err.code, err.headers.get("X-Sparkfleet-User")
    finally:
        server.shutdown()


def test_a_hub_users_token_is_that_user(hub):
    verifier = connect_auth.Verifier(CLUSTER_TOKEN, hub, None, 5)
    assert check(verifier, "Bearer alice-server-token") == (200, "alice")
    # The hub is asked with JupyterHub's token scheme.
    assert StandInHub.asked == ["alice-server-token"]


def test_the_cluster_token_may_run_as_anyone(hub):
    verifier = connect_auth.Verifier(CLUSTER_TOKEN, hub, None, 5)
    assert check(verifier, f"Bearer {CLUSTER_TOKEN}") == (200, "*")
    assert StandInHub.asked == []


@pytest.mark.parametrize("authorization", [
    None, "", "Bearer", "Bearer ", "Basic YWxpY2U6cHc=", "Bearer unknown-token", "Bearer culler-token",
    f"Bearer {CLUSTER_TOKEN}x", "token alice-server-token",
])
def test_anything_else_is_refused(hub, authorization):
    verifier = connect_auth.Verifier(CLUSTER_TOKEN, hub, None, 5)
    assert check(verifier, authorization) == (401, None)


def test_without_a_hub_only_the_cluster_token_passes():
    verifier = connect_auth.Verifier(CLUSTER_TOKEN, "", None, 5)
    assert check(verifier, "Bearer alice-server-token") == (401, None)
    assert check(verifier, f"Bearer {CLUSTER_TOKEN}") == (200, "*")


def test_no_cluster_token_configured_accepts_no_empty_token(hub):
    verifier = connect_auth.Verifier("", hub, None, 5)
    assert check(verifier, "Bearer ") == (401, None)


def test_a_hub_that_cannot_be_asked_is_a_refusal_not_a_pass():
    verifier = connect_auth.Verifier(CLUSTER_TOKEN, "http://127.0.0.1:9", None, 5)
    assert check(verifier, "Bearer alice-server-token") == (502, None)


def test_an_answer_is_kept_for_the_cache_time_and_a_revoked_token_then_fails(hub):
    verifier = connect_auth.Verifier(CLUSTER_TOKEN, hub, None, 0.5)
    assert verifier.user_for("Bearer alice-server-token") == "alice"
    assert verifier.user_for("Bearer alice-server-token") == "alice"
    assert StandInHub.asked == ["alice-server-token"]
    del HUB_TOKENS["alice-server-token"]
    try:
        time.sleep(0.6)
        assert verifier.user_for("Bearer alice-server-token") is None
    finally:
        HUB_TOKENS["alice-server-token"] = {"kind": "user", "name": "alice"}


def test_an_accounts_own_token_is_that_account_only():
    digest = hashlib.sha256(b"jupyter-token").hexdigest()
    accounts = connect_auth.parse_accounts(f"jupyter:{digest}, ")
    verifier = connect_auth.Verifier(CLUSTER_TOKEN, "", None, 5, accounts=accounts)
    assert check(verifier, "Bearer jupyter-token") == (200, "jupyter")
    assert check(verifier, "Bearer jupyter-token2") == (401, None)
    assert check(verifier, f"Bearer {digest}") == (401, None)
    with pytest.raises(SystemExit, match="'bob' has no SHA-256 digest"):
        connect_auth.parse_accounts("bob:abc")
