"""Confine what notebook containers reach (the docker role's notebook firewall).

Notebook containers' traffic enters this host by a Docker bridge (docker_gwbridge for Swarm
services, the spawner's network's bridge for the docker spawner) and leaves masqueraded with this
host's address, which the cluster's own firewalls trust. Packets from and to those bridges go
through five chains of our own, which this script fills in one iptables-restore transaction
(declaring a chain flushes it, so running it again leaves one copy of each rule):

  DOCKER-USER -> SPARKFLEET-NOTEBOOKS-FWD  -i <bridge> -g SPARKFLEET-NOTEBOOKS          (from notebooks)
                                           -o <bridge> -g SPARKFLEET-NOTEBOOKS-INBOUND  (to notebooks)
  INPUT       -> SPARKFLEET-NOTEBOOKS-IN   -i <bridge> -g SPARKFLEET-NOTEBOOKS-HOST     (to this host)

The first and the last let through replies, the allowed endpoints and DNS; then SPARKFLEET-NOTEBOOKS
rejects the refused networks (the cluster's hosts, the cloud metadata server, the operator's
networks) and returns the rest (the outside world) to Docker's rules, and SPARKFLEET-NOTEBOOKS-HOST
rejects everything else. SPARKFLEET-NOTEBOOKS-INBOUND lets through replies and new connections from
the callers (the hub, whose proxy reaches each server at its published port) and rejects the rest:
a published port goes around the host's own input firewall, and only the hub has business there.
Docker never flushes DOCKER-USER; the jumps into our chains are added once, at the top, and never
duplicated. The `iptables` commands are the ones on PATH, which the host's
alternatives point at the backend dockerd uses too.

    notebook_firewall.py --config FILE            apply (the systemd unit's ExecStart)
    notebook_firewall.py --config FILE --print    print the iptables-restore payloads, change nothing
    notebook_firewall.py --remove                 delete the jumps and the chains
    notebook_firewall.py --probe ENDPOINT...      from inside a container: what answers (JSON lines);
                                                  ENDPOINT is host:port or http://host:port/path
The configuration (JSON, rendered by Ansible):
    {"networks": ["docker_gwbridge"],
     "allowed": [{"name": "jupyterhub-api", "addresses": ["10.0.0.9"], "port": 8081}, ...],
     "refused": ["10.0.0.1", "169.254.169.254", "fd00:ec2::254", "10.0.0.0/16"],
     "callers": ["10.0.0.9"]}
"""

import argparse
import ipaddress
import json
import socket
import subprocess
import sys
import time

FORWARD_HOOK, INPUT_HOOK = "SPARKFLEET-NOTEBOOKS-FWD", "SPARKFLEET-NOTEBOOKS-IN"
OUTBOUND, HOST, INBOUND = "SPARKFLEET-NOTEBOOKS", "SPARKFLEET-NOTEBOOKS-HOST", "SPARKFLEET-NOTEBOOKS-INBOUND"
CHAINS = (FORWARD_HOOK, INPUT_HOOK, OUTBOUND, HOST, INBOUND)
# Docker's own bridges, named the same on every host: used when the network does not exist yet
# (docker_gwbridge appears when the host joins a Swarm).
KNOWN_BRIDGES = {"docker_gwbridge": "docker_gwbridge", "bridge": "docker0"}
FAMILIES = {4: ("iptables", "iptables-restore", "icmp-port-unreachable"),
            6: ("ip6tables", "ip6tables-restore", "icmp6-port-unreachable")}


class FirewallError(Exception):
    pass


def bridge_of(network):
    """The Linux bridge a Docker network's containers' traffic enters the host by."""
    try:
        out = subprocess.run(
            ["docker", "network", "inspect", "--format",
             '{{.Id}} {{index .Options "com.docker.network.bridge.name"}}', network],
            check=True, capture_output=True, text=True, timeout=30).stdout.split()
    except (OSError, subprocess.SubprocessError):
        out = []
    if out:
        # A network created without a bridge name gets br-<the first 12 digits of its id>.
        return out[1] if len(out) > 1 and out[1] != "<no" else "br-" + out[0][:12]
    if network in KNOWN_BRIDGES:
        return KNOWN_BRIDGES[network]
    raise FirewallError(f"the Docker network {network!r} does not exist on this host: its notebooks would be "
                        "unconfined. Create it (or correct docker_notebook_firewall_networks) and run this again.")


def _split(addresses, where):
    out = {4: [], 6: []}
    for text in addresses:
        try:
            net = ipaddress.ip_network(text, strict=False)
        except ValueError:
            raise FirewallError(f"{where}: {text!r} is not an address or network") from None
        out[net.version].append(str(net) if net.prefixlen < net.max_prefixlen else str(net.network_address))
    return out


def rules(config, bridges, version):
    """The rules of our five chains for one address family, in order."""
    reject = FAMILIES[version][2]
    allowed = []
    for entry in config.get("allowed", []):
        port = int(entry["port"])
        for address in _split(entry["addresses"], entry.get("name", "allowed"))[version]:
            allowed.append(f"-d {address} -p tcp -m tcp --dport {port} -j RETURN")
    common = (["-m conntrack --ctstate RELATED,ESTABLISHED -j RETURN"] + allowed
              + ["-p udp -m udp --dport 53 -j RETURN", "-p tcp -m tcp --dport 53 -j RETURN"])
    out = []
    for bridge in bridges:
        out.append(f"-A {FORWARD_HOOK} -i {bridge} -g {OUTBOUND}")
        out.append(f"-A {FORWARD_HOOK} -o {bridge} -g {INBOUND}")
        out.append(f"-A {INPUT_HOOK} -i {bridge} -g {HOST}")
    out += [f"-A {OUTBOUND} {rule}" for rule in common]
    for net in _split(config.get("refused", []), "refused")[version]:
        out.append(f"-A {OUTBOUND} -d {net} -p tcp -j REJECT --reject-with tcp-reset")
        out.append(f"-A {OUTBOUND} -d {net} -j REJECT --reject-with {reject}")
    out += [f"-A {HOST} {rule}" for rule in common]
    out += [f"-A {HOST} -p tcp -j REJECT --reject-with tcp-reset", f"-A {HOST} -j REJECT --reject-with {reject}"]
    out.append(f"-A {INBOUND} -m conntrack --ctstate RELATED,ESTABLISHED -j RETURN")
    out += [f"-A {INBOUND} -s {caller} -j RETURN" for caller in _split(config.get("callers", []), "callers")[version]]
    out += [f"-A {INBOUND} -p tcp -j REJECT --reject-with tcp-reset", f"-A {INBOUND} -j REJECT --reject-with {reject}"]
    return out


def payload(config, bridges, version, jumps):
    """An iptables-restore --noflush payload: our chains declared (so flushed) and refilled, plus the
    jumps `jumps` ([(hook chain, our chain)]) that are missing."""
    lines = ["*filter"] + [f":{chain} - [0:0]" for chain in CHAINS]
    lines += [f"-I {hook} 1 -j {chain}" for hook, chain in jumps]
    return "\n".join(lines + rules(config, bridges, version) + ["COMMIT", ""])


def _run(argv, stdin=None):
    return subprocess.run(argv, input=stdin, capture_output=True, text=True, check=False)


def _listing(tool, chain):
    """`iptables -S chain` as a list of lines, or None when the chain does not exist."""
    result = _run([tool, "-w", "-S", chain])
    return result.stdout.splitlines() if result.returncode == 0 else None


def apply(config, bridges):
    for version, (tool, restore, _unused) in FAMILIES.items():
        if _listing(tool, "INPUT") is None:
            if version == 6:
                print(f"{tool} is not usable here; no IPv6 rules (the containers then have no IPv6 either).",
                      file=sys.stderr)
                continue
            raise FirewallError(f"{tool} cannot read the filter table: {_run([tool, '-w', '-S', 'INPUT']).stderr.strip()}")
        forward = "DOCKER-USER"
        if _listing(tool, forward) is None:
            if version == 4:
                raise FirewallError("there is no DOCKER-USER chain: is dockerd running, with its iptables rules on?")
            forward = "FORWARD"  # dockerd does not manage ip6tables here
        jumps = [(hook, chain) for hook, chain in ((forward, FORWARD_HOOK), ("INPUT", INPUT_HOOK))
                 if f"-A {hook} -j {chain}" not in (_listing(tool, hook) or [])]
        result = _run([restore, "-w", "5", "--noflush"], payload(config, bridges, version, jumps))
        if result.returncode != 0:
            raise FirewallError(f"{restore} refused the rules: {result.stderr.strip()}")
    print(f"Notebook firewall applied on {', '.join(bridges)}.")


def remove():
    """Delete the jumps into our chains and the chains; prints 'removed' when there was something."""
    found = False
    for tool, _restore, _family in FAMILIES.values():
        for hook in ("DOCKER-USER", "FORWARD", "INPUT"):
            for chain in (FORWARD_HOOK, INPUT_HOOK):
                while _run([tool, "-w", "-D", hook, "-j", chain]).returncode == 0:
                    found = True
        for chain in CHAINS:
            if _run([tool, "-w", "-F", chain]).returncode == 0:
                found = True
        for chain in CHAINS:
            _run([tool, "-w", "-X", chain])
    print("removed" if found else "absent")


def probe(endpoint, timeout):
    """Connect to host:port (and for http://host:port/path send a GET): open, refused, timeout or
    unreachable, with the time it took and the HTTP status line."""
    http = endpoint.startswith("http://")
    hostport, _sep, path = endpoint[len("http://"):].partition("/") if http else (endpoint, "", "")
    host, _sep, port = hostport.rpartition(":")
    result = {"endpoint": endpoint}
    start = time.monotonic()
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout) as sock:
            result["result"] = "open"
            if http:
                sock.sendall(f"GET /{path} HTTP/1.0\r\nHost: {hostport}\r\n\r\n".encode())
                result["http"] = sock.recv(4096).decode("latin-1").split("\r\n", 1)[0]
    except ConnectionRefusedError:
        result["result"] = "refused"
    except (socket.timeout, TimeoutError):
        result["result"] = "timeout"
    except OSError as exc:
        result["result"] = "unreachable" if exc.errno in (101, 113) else f"error: {exc}"
    result["seconds"] = round(time.monotonic() - start, 2)
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--config", help="the JSON configuration to apply")
    action.add_argument("--remove", action="store_true", help="delete the jumps and the chains")
    action.add_argument("--probe", nargs="+", metavar="ENDPOINT", help="connect to each, print JSON lines")
    parser.add_argument("--print", action="store_true", help="with --config: print the payloads, change nothing")
    parser.add_argument("--timeout", type=float, default=3.0, help="seconds per probe")
    args = parser.parse_args(argv)
    try:
        if args.probe:
            for endpoint in args.probe:
                print(json.dumps(probe(endpoint, args.timeout)), flush=True)
        elif args.remove:
            remove()
        else:
            with open(args.config, encoding="utf-8") as handle:
                config = json.load(handle)
            bridges, missing = set(), []
            for network in config["networks"]:
                try:
                    bridges.add(bridge_of(network))
                except FirewallError as exc:
                    missing.append(str(exc))
            bridges = sorted(bridges)
            if args.print:
                for version, (_tool, restore, _family) in FAMILIES.items():
                    print(f"# {restore} --noflush")
                    print(payload(config, bridges, version, [("DOCKER-USER", FORWARD_HOOK), ("INPUT", INPUT_HOOK)]))
            else:
                apply(config, bridges)
            # The other networks are confined all the same; the unit fails, so this is seen.
            if missing:
                raise FirewallError("; ".join(missing))
    except FirewallError as exc:
        print(f"notebook firewall: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
