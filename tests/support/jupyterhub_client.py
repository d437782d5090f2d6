"""A JupyterHub user, without a browser: logs in through the hub's own login form or through
OAuth, starts a server and talks to it through the proxy, over verified TLS. Each command prints
what it observed as JSON (the Molecule verify asserts on it). Standard library only.

    jupyterhub_client.py --base https://localhost:8443 --cafile ca.crt lab --user alice:pw --outsider mallory:pw
    jupyterhub_client.py ... server --user alice:pw
    jupyterhub_client.py ... home --user alice:pw --file keep-me.txt --content 'run 42' --expect journey.ipynb
    jupyterhub_client.py ... github --login octo-member
    jupyterhub_client.py --base https://hub --public https://localhost:8444 ... github --login octo-member
(--public: the hub's public URL when this host reaches the hub at --base instead, as on the lab's
hub, whose public URL is the controller's published port: absolute URLs under it, such as the
OAuth callback the provider redirects to, are sent to --base.)
"""

import argparse
import http.cookiejar
import json
import re
import ssl
import sys
import time
import urllib.error
import urllib.parse
import urllib.request


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


class Session:
    def __init__(self, base, cafile, public=None):
        self.base = base.rstrip("/")
        self.public = (public or base).rstrip("/")
        self.jar = http.cookiejar.CookieJar()
        context = ssl.create_default_context(cafile=cafile)
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(self.jar), urllib.request.HTTPSHandler(context=context), NoRedirect())

    def url(self, path):
        if "://" not in path:
            return self.base + path
        if path == self.public or path.startswith(self.public + "/"):
            return self.base + path[len(self.public):]
        return path

    def cookie(self, name):
        return next((c.value for c in self.jar if c.name == name), None)

    def request(self, path, data=None, headers=None, api=False):
        """One request, redirects not followed; response header names in lower case."""
        headers = dict(headers or {})
        if api and self.cookie("_xsrf"):
            headers["X-XSRFToken"] = self.cookie("_xsrf")
        body = urllib.parse.urlencode(data).encode() if isinstance(data, dict) else data
        req = urllib.request.Request(self.url(path), data=body, headers=headers)
        try:
            with self.opener.open(req, timeout=60) as resp:
                return resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as err:
            return err.code, {k.lower(): v for k, v in err.headers.items()}, err.read().decode("utf-8", "replace")

    def follow(self, path, limit=15):
        """GET, following redirects; returns the last response and the chain of URLs."""
        url, chain = self.url(path), []
        for _attempt in range(limit):
            chain.append(url)
            status, headers, body = self.request(url)
            if status in (301, 302, 303, 307, 308):
                url = urllib.parse.urljoin(url, headers["location"])
                continue
            return status, body, chain
        return status, body, chain

    def api(self, path):
        status, _headers, body = self.request("/hub/api" + path, headers={"Accept": "application/json"}, api=True)
        try:
            return status, json.loads(body)
        except ValueError:
            return status, None

    def login(self, username, password):
        status, _headers, page = self.request("/hub/login")
        match = re.search(r'name="_xsrf"\s+value="([^"]+)"', page)
        form = {"username": username, "password": password}
        if match:
            form["_xsrf"] = match.group(1)
        status, headers, body = self.request("/hub/login", data=form)
        return {"status": status, "location": headers.get("location"),
                "invalid_message": "Invalid username or password" in body,
                "session_cookie": self.cookie("jupyterhub-session-id") is not None
                and self.cookie("jupyterhub-hub-login") is not None}


def _user(spec):
    name, _sep, password = spec.partition(":")
    return name, password


def cmd_lab(args):
    out = {}
    anon = Session(args.base, args.cafile)
    status, headers, _body = anon.request("/hub/home")
    out["anonymous_home"] = {"status": status, "location": headers.get("location")}
    name, password = _user(args.user)
    # Without a running server the proxy hands /user/... to the hub, which redirects (via
    # /hub/user/...) to its login page; with one, the single-user server answers 403.
    status, _body, chain = anon.follow(f"/user/{name}/api/status")
    out["anonymous_user_api"] = {"status": status, "final_url": chain[-1], "hops": len(chain)}
    out["anonymous_hub_api"] = {"status": anon.api("/users")[0]}

    if args.outsider:
        outsider = Session(args.base, args.cafile)
        out["outsider_login"] = outsider.login(*_user(args.outsider))
        status, headers, _body = outsider.request("/hub/home")
        out["outsider_home_after"] = {"status": status, "location": headers.get("location")}

    wrong = Session(args.base, args.cafile)
    out["wrong_password_login"] = wrong.login(name, password + "-wrong")

    user = Session(args.base, args.cafile)
    out["login"] = user.login(name, password)
    status, who = user.api("/user")
    out["whoami"] = {"status": status, "name": (who or {}).get("name"), "admin": (who or {}).get("admin")}
    # Start the server as the home page's button does (GET /hub/spawn; where the hub offers sizes, it
    # answers with its form, posted with --profile or the first size), then wait until ready.
    status, headers, body = user.request("/hub/spawn")
    out["spawn"] = {"status": status, "location": headers.get("location")}
    if status == 200 and 'name="profile"' in body:
        offered = re.findall(r'name="profile" value="([^"]+)"', body)
        form = {"profile": args.profile or offered[0], "_xsrf": user.cookie("_xsrf") or ""}
        status, headers, _body = user.request("/hub/spawn", data=form)
        out["spawn"] = {"status": status, "location": headers.get("location"), "offered": offered,
                        "profile": form["profile"]}
    started, deadline, server = time.monotonic(), time.monotonic() + args.timeout, None
    while time.monotonic() < deadline:
        status, who = user.api("/user")
        server = ((who or {}).get("servers") or {}).get("")
        if server and server.get("ready"):
            break
        time.sleep(2)
    out["server"] = {"ready": bool(server and server.get("ready")), "seconds": round(time.monotonic() - started, 1),
                     "url": (server or {}).get("url")}
    # JupyterLab through the proxy (the single-user server's OAuth dance with the hub), then its API.
    status, body, chain = user.follow(f"/user/{name}/lab")
    out["lab"] = {"status": status, "final_url": chain[-1], "hops": len(chain), "jupyterlab": "JupyterLab" in body}
    status, _headers, body = user.request(f"/user/{name}/api/status", headers={"Accept": "application/json"})
    try:
        payload = json.loads(body)
    except ValueError:
        payload = None
    out["user_api_status"] = {"status": status, "json": payload}
    # Another user's server is not this user's to open.
    if args.outsider:
        status, headers, _body = user.request(f"/user/{_user(args.outsider)[0]}/api/status")
        out["other_user_api"] = {"status": status, "location": headers.get("location")}
    return out


def cmd_server(args):
    user = Session(args.base, args.cafile)
    login = user.login(*_user(args.user))
    status, who = user.api("/user")
    server = ((who or {}).get("servers") or {}).get("")
    return {"login": login, "status": status, "server": server, "last_activity": (who or {}).get("last_activity")}


class TokenClient:
    """The hub's REST API and the user's server, with an API token of the user (no cookies, no XSRF)."""

    def __init__(self, session, token):
        self.session, self.token = session, token

    def call(self, method, path, payload=None):
        body = json.dumps(payload).encode() if payload is not None else None
        headers = {"Authorization": f"token {self.token}", "Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(self.session.url(path), data=body, headers=headers, method=method)
        try:
            with self.session.opener.open(req, timeout=60) as resp:
                status, text = resp.status, resp.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as err:
            status, text = err.code, err.read().decode("utf-8", "replace")
        try:
            return status, json.loads(text) if text else None
        except ValueError:
            return status, None

    def server(self, name):
        _status, user = self.call("GET", f"/hub/api/users/{name}")
        return ((user or {}).get("servers") or {}).get("")

    def wait(self, name, ready, timeout, started=None):
        """Until the default server is ready (ready=True) or gone (ready=False); the seconds since started
        (default now): the hub's API answers only after up to 10 s of the spawn or stop itself."""
        started = time.monotonic() if started is None else started
        while time.monotonic() < started + timeout:
            server = self.server(name)
            if (server and server.get("ready") and not server.get("pending")) if ready else not server:
                return round(time.monotonic() - started, 1)
            time.sleep(2)
        raise RuntimeError(f"{name}'s server not {'ready' if ready else 'stopped'} after {timeout} s: {self.server(name)}")

    def start(self, name, timeout, profile=None):
        """Start the default server; with a profile, at that size (the user_options the spawn page posts)."""
        started = time.monotonic()
        status, _body = self.call("POST", f"/hub/api/users/{name}/server", {"profile": profile} if profile else None)
        return {"status": status, "seconds": self.wait(name, True, timeout, started)}

    def stop(self, name, timeout):
        started = time.monotonic()
        status, _body = self.call("DELETE", f"/hub/api/users/{name}/server")
        return {"status": status, "seconds": self.wait(name, False, timeout, started)}


def user_token(session, name, note):
    """A short-lived API token of the logged-in user (the hub's own token API)."""
    status, _headers, body = session.request(
        f"/hub/api/users/{name}/tokens", data=json.dumps({"note": note, "expires_in": 3600}).encode(),
        headers={"Content-Type": "application/json", "Accept": "application/json"}, api=True)
    return status, (json.loads(body) if status in (200, 201) else None)


def cmd_stop(args):
    """Stop the user's server (if it runs) and wait until it is gone."""
    name, password = _user(args.user)
    session = Session(args.base, args.cafile)
    out = {"login": session.login(name, password)}
    status, token = user_token(session, name, "lab test: stop the server")
    out["token"] = {"status": status}
    if not token:
        return out
    client = TokenClient(session, token["token"])
    try:
        out["stop"] = client.stop(name, args.timeout) if client.server(name) else None
    finally:
        client.call("DELETE", f"/hub/api/users/{name}/tokens/{token['id']}")
    return out


def cmd_home(args):
    """Write a file through the server's contents API, stop the server, start it again, read the file back."""
    out = {}
    name, password = _user(args.user)
    session = Session(args.base, args.cafile)
    out["login"] = session.login(name, password)
    status, _headers, body = session.request(
        f"/hub/api/users/{name}/tokens", data=json.dumps({"note": "lab test: a kept home", "expires_in": 3600}).encode(),
        headers={"Content-Type": "application/json", "Accept": "application/json"}, api=True)
    out["token"] = {"status": status}
    if status not in (200, 201):
        return out
    token = json.loads(body)
    client = TokenClient(session, token["token"])
    try:
        running = client.server(name)
        out["first_start"] = None if running and running.get("ready") else client.start(name, args.timeout)
        contents = f"/user/{name}/api/contents"
        status, model = client.call("PUT", f"{contents}/{args.file}",
                                    {"type": "file", "format": "text", "content": args.content})
        out["write"] = {"status": status, "path": (model or {}).get("path")}
        out["expected_before"] = {f: client.call("GET", f"{contents}/{f}?content=0")[0] for f in args.expect}
        out["stop"] = client.stop(name, args.timeout)
        out["start"] = client.start(name, args.timeout, args.restart_profile)
        status, model = client.call("GET", f"{contents}/{args.file}?type=file&format=text")
        out["read"] = {"status": status, "content": (model or {}).get("content")}
        out["same_content"] = out["read"]["content"] == args.content
        out["expected_after"] = {f: client.call("GET", f"{contents}/{f}?content=0")[0] for f in args.expect}
    finally:
        client.call("DELETE", f"/hub/api/users/{name}/tokens/{token['id']}")
    return out


def cmd_github(args):
    out = {}
    s = Session(args.base, args.cafile, args.public)
    status, headers, _body = s.request("/hub/oauth_login")
    authorize = headers.get("location", "")
    out["oauth_login"] = {"status": status, "authorize_url": authorize.split("?")[0]}
    if status != 302:
        return out
    query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(authorize).query))
    out["authorize_params"] = sorted(query)
    # The user signs in at the (stand-in) GitHub, which sends the browser back with a code.
    status, headers, _body = s.request(authorize + "&" + urllib.parse.urlencode({"login": args.login}))
    callback = headers.get("location", "")
    out["provider"] = {"status": status, "callback": callback.split("?")[0]}
    if status != 302:
        return out
    status, headers, body = s.request(callback)
    out["callback"] = {"status": status, "location": headers.get("location"),
                       "forbidden_message": "Forbidden" in body or "not allowed" in body.lower()}
    status, who = s.api("/user")
    out["whoami"] = {"status": status, "name": (who or {}).get("name")}
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True)
    parser.add_argument("--cafile", required=True)
    parser.add_argument("--public", help="the hub's public URL, when it is not --base (see above)")
    sub = parser.add_subparsers(dest="command", required=True)
    lab = sub.add_parser("lab")
    lab.add_argument("--user", required=True, help="allowed user:password")
    lab.add_argument("--outsider", help="a valid account outside the allow-list, user:password (its checks are left out without one)")
    lab.add_argument("--timeout", type=int, default=120)
    lab.add_argument("--profile", help="the size to choose when the hub offers its spawn page (default: the first)")
    server = sub.add_parser("server")
    server.add_argument("--user", required=True)
    stop = sub.add_parser("stop")
    stop.add_argument("--user", required=True, help="user:password")
    stop.add_argument("--timeout", type=int, default=120)
    home = sub.add_parser("home")
    home.add_argument("--user", required=True, help="user:password")
    home.add_argument("--file", required=True, help="the file to write in the home, relative to it")
    home.add_argument("--content", required=True)
    home.add_argument("--expect", action="append", default=[], help="a file of the home that must be there (repeat)")
    home.add_argument("--timeout", type=int, default=240)
    home.add_argument("--restart-profile", help="the size the server starts again at (e.g. one placed on another worker)")
    github = sub.add_parser("github")
    github.add_argument("--login", required=True)
    args = parser.parse_args()
    result = {"lab": cmd_lab, "server": cmd_server, "home": cmd_home, "stop": cmd_stop, "github": cmd_github}[args.command](args)
    json.dump(result, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
