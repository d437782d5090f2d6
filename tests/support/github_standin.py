"""A stand-in for a GitHub Enterprise Server, for exercising oauthenticator's
GitHubOAuthenticator (github_url = http://<here>) without GitHub.

Serves exactly what GitHubOAuthenticator calls (oauthenticator/github.py):
  GET  /login/oauth/authorize       the user "signs in": ?login=<user> picks the account (no
                                    login: a form asks for it); redirects to redirect_uri with
                                    a one-time code and the hub's state
  POST /login/oauth/access_token    code + client_id + client_secret -> access token (JSON; PKCE S256 checked)
  GET  /api/v3/user                 the token's user ({"login": ...})
  GET  /api/v3/orgs/<org>/members/<user>   204 member, 404 not (the check for
                                    allowed_organizations)
Every request is appended to --log as one JSON line, so a test can show the hub asked.
Standard library only.

    github_standin.py --port 9999 --client-id ID --client-secret SECRET \
        --user octo-member --user octo-outsider --member sparkfleet-lab:octo-member --log requests.jsonl
"""

import argparse
import base64
import hashlib
import html
import json
import secrets
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class State:
    def __init__(self, args):
        self.client_id = args.client_id
        self.client_secret = args.client_secret
        self.users = {name: index + 1 for index, name in enumerate(args.user)}
        self.members = {}
        for item in args.member:
            org, _sep, user = item.partition(":")
            self.members.setdefault(org, set()).add(user)
        self.codes = {}
        self.tokens = {}
        self.lock = threading.Lock()
        self.log = args.log


def make_handler(state):
    class Handler(BaseHTTPRequestHandler):
        server_version = "GitHubStandIn/1.0"

        def log_message(self, fmt, *args):  # one JSON line per request instead
            return

        def _record(self, status, **extra):
            if state.log:
                entry = {"method": self.command, "path": urllib.parse.urlsplit(self.path).path, "status": status}
                entry.update(extra)
                with state.lock, open(state.log, "a", encoding="utf-8") as log:
                    log.write(json.dumps(entry) + "\n")

        def _send(self, status, body=None, headers=None, **record):
            data = b"" if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            if body is not None and not (headers or {}).get("Content-Type"):
                self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            self._record(status, **record)

        def _token_user(self):
            auth = self.headers.get("Authorization", "")
            scheme, _sep, token = auth.partition(" ")
            if scheme.lower() not in ("token", "bearer"):
                return None
            return state.tokens.get(token)

        def do_GET(self):  # noqa: N802 - http.server's naming
            url = urllib.parse.urlsplit(self.path)
            query = dict(urllib.parse.parse_qsl(url.query))
            parts = [p for p in url.path.split("/") if p]
            if url.path == "/login/oauth/authorize":
                if query.get("client_id") != state.client_id:
                    return self._send(400, {"error": "unknown client_id"})
                login = query.get("login")
                if not login:
                    fields = "".join(f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">'
                                     for k, v in query.items())
                    page = (f"<html><body><h1>Sign in to the GitHub stand-in</h1><form method=get>{fields}"
                            "<input name=login id=login><button id=signin>Sign in</button></form></body></html>")
                    return self._send(200, page.encode(), {"Content-Type": "text/html"})
                if login not in state.users:
                    return self._send(404, {"error": f"no user {login}"})
                code = secrets.token_hex(16)
                with state.lock:
                    state.codes[code] = (login, query.get("code_challenge"))
                target = query["redirect_uri"] + ("&" if "?" in query["redirect_uri"] else "?") + urllib.parse.urlencode(
                    {"code": code, "state": query.get("state", "")})
                return self._send(302, None, {"Location": target}, login=login)
            if url.path == "/api/v3/user":
                user = self._token_user()
                if not user:
                    return self._send(401, {"message": "Bad credentials"})
                return self._send(200, {"login": user, "id": state.users[user], "name": user.title(), "email": None})
            if len(parts) == 6 and parts[:3] == ["api", "v3", "orgs"] and parts[4] == "members":
                if not self._token_user():
                    return self._send(401, {"message": "Bad credentials"})
                org, user = parts[3], parts[5]
                if user in state.members.get(org, set()):
                    return self._send(204, None, org=org, user=user)
                return self._send(404, {"message": "Not Found"}, org=org, user=user)
            return self._send(404, {"message": "Not Found"})

        def do_POST(self):  # noqa: N802
            url = urllib.parse.urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            form = dict(urllib.parse.parse_qsl(self.rfile.read(length).decode()))
            if url.path != "/login/oauth/access_token":
                return self._send(404, {"message": "Not Found"})
            if form.get("client_id") != state.client_id or form.get("client_secret") != state.client_secret:
                return self._send(200, {"error": "incorrect_client_credentials",
                                        "error_description": "The client_id and/or client_secret passed are incorrect."})
            with state.lock:
                login, challenge = state.codes.pop(form.get("code", ""), (None, None))
            if not login:
                return self._send(200, {"error": "bad_verification_code",
                                        "error_description": "The code passed is incorrect or expired."})
            # PKCE (RFC 7636, S256), as oauthenticator sends it by default.
            if challenge:
                digest = hashlib.sha256(form.get("code_verifier", "").encode()).digest()
                if base64.urlsafe_b64encode(digest).rstrip(b"=").decode() != challenge:
                    return self._send(200, {"error": "invalid_grant", "error_description": "PKCE verification failed."})
            token = secrets.token_hex(20)
            with state.lock:
                state.tokens[token] = login
            return self._send(200, {"access_token": token, "token_type": "bearer", "scope": "read:org"}, login=login)

    return Handler


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bind", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9999)
    parser.add_argument("--client-id", required=True)
    parser.add_argument("--client-secret", required=True)
    parser.add_argument("--user", action="append", default=[], help="an account (repeat)")
    parser.add_argument("--member", action="append", default=[], help="org:user membership (repeat)")
    parser.add_argument("--log", help="append one JSON line per request here")
    args = parser.parse_args()
    ThreadingHTTPServer((args.bind, args.port), make_handler(State(args))).serve_forever()


if __name__ == "__main__":
    main()
