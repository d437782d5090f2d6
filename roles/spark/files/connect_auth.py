"""Who is calling Spark Connect: nginx's auth_request asks this service before each gRPC call.

nginx sends the caller's "Authorization: Bearer <token>" here (GET /verify, no body). The answer:
- 200 with "X-Sparkfleet-User: <name>" when the token is a JupyterHub user's API token (each
  notebook server has its own; the hub revokes it when the server stops or the user is removed):
  the hub's /hub/api/user names its owner;
- 200 with "X-Sparkfleet-User: <account>" for an account's own Connect token (the thin master's
  notebook accounts, which have no hub: spark_connect_user_accounts);
- 200 with "X-Sparkfleet-User: *" for the cluster's Connect token (operators: they may run as any
  user);
- 401 for anything else, 502 when the hub cannot be asked.
nginx passes the name on to the Connect server as gRPC metadata, where the collection's
interceptor refuses a request whose user_id is not that name (VerifiedUserInterceptor.java).

A hub answer is kept for --cache-seconds (by the token's SHA-256), so a query's dozen calls cost
one hub request; a revoked token stops working within that time. Standard library only: it runs
with the host's python3. The tokens come from the environment, never argv: the cluster token
(SPARK_CONNECT_AUTHENTICATE_TOKEN, the Connect server's root-only environment file) and the
accounts' tokens as SHA-256 digests (SPARKFLEET_CONNECT_ACCOUNTS=<account>:<hex digest>,...).
"""

import argparse
import hashlib
import hmac
import http.server
import json
import os
import ssl
import sys
import threading
import time
import urllib.error
import urllib.request

OPERATOR = "*"


class Verifier:
    """Maps a bearer token to the name of the user it belongs to (None: refused)."""

    def __init__(self, cluster_token, hub_url, cafile, cache_seconds, ask_hub=None, accounts=None):
        self.cluster_token = cluster_token or ""
        # {account: SHA-256 hex digest of its token}
        self.accounts = dict(accounts or {})
        self.hub_url = (hub_url or "").rstrip("/")
        self.cache_seconds = cache_seconds
        self.context = ssl.create_default_context(cafile=cafile) if cafile else ssl.create_default_context()
        self.ask_hub = ask_hub or self._ask_hub
        self.cache = {}
        self.lock = threading.Lock()

    def user_for(self, authorization):
        scheme, _sep, token = (authorization or "").partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return None
        if self.cluster_token and hmac.compare_digest(token.encode(), self.cluster_token.encode()):
            return OPERATOR
        key = hashlib.sha256(token.encode()).hexdigest()
        for account, digest in self.accounts.items():
            if hmac.compare_digest(key, digest):
                return account
        if not self.hub_url:
            return None
        now = time.monotonic()
        with self.lock:
            hit = self.cache.get(key)
            if hit and hit[1] > now:
                return hit[0]
        name = self.ask_hub(token)
        if name is not None:
            with self.lock:
                # Expired entries go on the next miss, so the cache stays as small as the active users.
                self.cache = {k: v for k, v in self.cache.items() if v[1] > now}
                self.cache[key] = (name, now + self.cache_seconds)
        return name

    def _ask_hub(self, token):
        request = urllib.request.Request(self.hub_url + "/hub/api/user", headers={"Authorization": f"token {token}"})
        try:
            with urllib.request.urlopen(request, timeout=10, context=self.context) as response:
                model = json.load(response)
        except urllib.error.HTTPError as err:
            if err.code in (401, 403, 404):
                return None
            raise
        # Only a user's own token: a service's token (the idle culler's) is not a Spark user.
        if model.get("kind", "user") != "user" or not model.get("name"):
            return None
        return model["name"]


def parse_accounts(text):
    """{account: digest} from "<account>:<hex digest>,..." (empty: none)."""
    accounts = {}
    for entry in filter(None, (part.strip() for part in text.split(","))):
        account, _sep, digest = entry.partition(":")
        if not account or len(digest) != 64:
            raise SystemExit(f"SPARKFLEET_CONNECT_ACCOUNTS: {account!r} has no SHA-256 digest")
        accounts[account] = digest.lower()
    return accounts


def handler_for(verifier):
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the http.server interface
            try:
                name = verifier.user_for(self.headers.get("Authorization"))
            except Exception as err:  # noqa: BLE001 - the hub could not be asked: say so, refuse
                self.log_message("hub not reached: %s", err)
                self.send_response(502)
                self.end_headers()
                return
            if name is None:
                self.send_response(401)
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("X-Sparkfleet-User", name)
            self.end_headers()

        def log_message(self, fmt, *args):
            sys.stderr.write("connect-auth: " + (fmt % args) + "\n")

        def log_request(self, code="-", size="-"):
            # A refusal is worth a line; each allowed call is not.
            if str(code) != "200":
                super().log_request(code, size)

    return Handler


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--listen", default="127.0.0.1:15013", help="address:port (loopback: only nginx asks)")
    parser.add_argument("--hub-url", default="", help="the hub's base URL, e.g. https://hub.example.org; empty: no hub")
    parser.add_argument("--cafile", default="", help="CA bundle the hub's certificate is checked with")
    parser.add_argument("--cache-seconds", type=float, default=5.0)
    args = parser.parse_args(argv)
    verifier = Verifier(os.environ.get("SPARK_CONNECT_AUTHENTICATE_TOKEN", ""), args.hub_url, args.cafile or None,
                        args.cache_seconds, accounts=parse_accounts(os.environ.get("SPARKFLEET_CONNECT_ACCOUNTS", "")))
    host, _sep, port = args.listen.rpartition(":")
    server = http.server.ThreadingHTTPServer((host, int(port)), handler_for(verifier))
    server.serve_forever()


if __name__ == "__main__":
    main()
