"""From a machine outside the cluster (a container on the cluster's network that is none of its
hosts): what the UI gateway answers without, with a wrong and with the right credential, and
whether the UIs' own ports can be reached. Python's standard library only (the base image's
python3). TLS is checked against the cluster CA and the gateway's name. Prints one JSON object.

    gateway_probe.py --base https://sf-master:8443 --cafile ca.crt --credentials cred \
        --app-name sparkfleet-gateway-ui --udp-echo sf-master:47999 --ports sf-master:8080 sf-worker-1:8081 ...

--credentials names a file holding "user:password" (never argv).
"""

import argparse
import base64
import json
import socket
import ssl
import sys
import urllib.error
import urllib.request


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: PLR0913 - urllib's signature
        return None


def fetch(context, url, auth=None, follow=True, data=None, headers=None):
    """(status, body text, final URL); body capped at 2 MB. With data: a form POST."""
    handlers = [urllib.request.HTTPSHandler(context=context)]
    if not follow:
        handlers.append(NoRedirect())
    opener = urllib.request.build_opener(*handlers)
    request = urllib.request.Request(url, data=data, headers=headers or {})
    if auth:
        request.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
    try:
        with opener.open(request, timeout=20) as response:
            return response.status, response.read(2_000_000).decode("utf-8", "replace"), response.geturl()
    except urllib.error.HTTPError as err:
        return err.code, err.read(2_000_000).decode("utf-8", "replace"), url
    except (urllib.error.URLError, OSError) as err:
        return 0, f"{type(err).__name__}: {err}", url


def fetch_json(context, url, auth):
    status, body, final = fetch(context, url, auth)
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    return {"status": status, "json": data, "url": final, "body": None if data is not None else body[:300]}


def port_state(target, timeout):
    host, _sep, port = target.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            return "open"
    except socket.timeout:
        return "timeout"
    except OSError as err:
        return f"closed ({err.strerror or err})"


def udp_echo(target, timeout):
    """Send a datagram to an echo server; "echoed" when it came back (the firewall let UDP through)."""
    host, _sep, port = target.rpartition(":")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(timeout)
        try:
            sock.sendto(b"sparkfleet-probe", (host, int(port)))
            data, _peer = sock.recvfrom(64)
        except OSError as err:
            return f"no answer ({err})"
    return "echoed" if data == b"sparkfleet-probe" else f"wrong answer {data!r}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True, help="the gateway, e.g. https://sf-master:8443")
    parser.add_argument("--cafile", required=True)
    parser.add_argument("--credentials", required=True, help="file with user:password")
    parser.add_argument("--spark-path", default="/spark")
    parser.add_argument("--history-path", default="/history")
    parser.add_argument("--app-name", required=True, help="name of a running application")
    parser.add_argument("--ports", nargs="*", default=[], help="host:port of the UIs' own ports")
    parser.add_argument("--port-timeout", type=float, default=3.0)
    parser.add_argument("--udp-echo", help="host:port of a UDP echo server (traffic the firewall must leave alone)")
    args = parser.parse_args()

    context = ssl.create_default_context(cafile=args.cafile)
    with open(args.credentials, encoding="utf-8") as handle:
        auth = handle.read().strip()
    user = auth.split(":", 1)[0]
    base = args.base.rstrip("/")
    spark, history = args.spark_path.rstrip("/"), args.history_path.rstrip("/")
    result = {}

    # With the credential: the master's own JSON names the workers and the running application.
    master = fetch_json(context, f"{base}{spark}/json/", auth)
    result["master"] = master
    state = master["json"] or {}
    workers = [w for w in state.get("workers", []) if w.get("state") == "ALIVE"]
    apps = [a for a in state.get("activeapps", []) if a.get("name") == args.app_name]
    result["workers"] = {w["host"]: fetch_json(context, f"{base}{spark}/proxy/{w['id']}/json/", auth)
                         | {"id": w["id"]} for w in workers}
    result["app"] = (fetch_json(context, f"{base}{spark}/proxy/{apps[0]['id']}/api/v1/applications", auth)
                     | {"id": apps[0]["id"]}) if apps else None
    result["history"] = fetch_json(context, f"{base}{history}/api/v1/applications", auth)
    pages = {"master_page": f"{spark}/", "history_page": f"{history}/",
             "app_page": f"{spark}/proxy/{apps[0]['id']}/jobs/" if apps else None}
    for name, path in pages.items():
        if path:
            status, body, final = fetch(context, base + path, auth)
            result[name] = {"status": status, "url": final, "title": body.split("<title>", 1)[-1].split("</title>", 1)[0][:200]
                            if "<title>" in body else None,
                            "proxy_links": sorted({part.split('"', 1)[0] for part in body.split(f'href="{spark}/proxy/')[1:]})[:20]}

    # Without, and with a wrong, credential: every UI path, the known ids included, is refused.
    paths = ["/", spark, f"{spark}/", f"{spark}/json/", f"{spark}/static/spark-dag-viz.js", history, f"{history}/",
             f"{history}/api/v1/applications", "/no-such-ui/", "/index.html"]
    paths += [f"{spark}/proxy/{w['id']}/json/" for w in workers]
    paths += [f"{spark}/proxy/{a['id']}/api/v1/applications" for a in apps]
    result["without_credentials"] = {p: fetch(context, base + p, follow=False)[0] for p in paths}
    result["wrong_password"] = {p: fetch(context, base + p, f"{user}:not-the-password", follow=False)[0]
                                for p in paths}

    # What a page on another site can make a logged-in admin's browser send: the login goes along,
    # the page cannot set Origin or Sec-Fetch-Site. The kill buttons' form post for the running
    # application must be refused; the same post from the gateway's own page reaches Spark (for an
    # application id that does not exist, so nothing is killed).
    kill = f"{base}{spark}/app/kill/"
    foreign = {"origin": {"Origin": "https://attacker.example"},
               "fetch_site": {"Sec-Fetch-Site": "cross-site"},
               "same_site": {"Sec-Fetch-Site": "same-site", "Origin": "https://ui.attacker.example"}}
    if apps:
        form = f"id={apps[0]['id']}&terminate=true".encode()
        result["foreign_kill"] = {name: fetch(context, kill, auth, follow=False, data=form, headers=headers)[0]
                                  for name, headers in foreign.items()}
        after = fetch_json(context, f"{base}{spark}/json/", auth)["json"] or {}
        result["app_alive_after_foreign_kill"] = any(a.get("id") == apps[0]["id"] for a in after.get("activeapps", []))
    own = {"Origin": base, "Sec-Fetch-Site": "same-origin"}
    result["own_kill"] = fetch(context, kill, auth, follow=False, data=b"id=app-00000000000000-0000&terminate=true",
                               headers=own)[0]
    result["foreign_read"] = fetch(context, f"{base}{spark}/json/", auth, headers=foreign["fetch_site"])[0]

    result["ports"] = {target: port_state(target, args.port_timeout) for target in args.ports}
    result["udp_echo"] = udp_echo(args.udp_echo, args.port_timeout) if args.udp_echo else None
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
