# -*- coding: utf-8 -*-
# Copyright: sparkfleet contributors
# Apache License 2.0
"""sparkfleet's GPU exporter: each GPU's state from NVML, in Prometheus' text format.

Served on GET /metrics at the address given with --listen (the host's private address: Prometheus
scrapes it as job ``gpu``), over HTTPS with --tls-cert/--tls-key (TLS 1.2 or later) and only to a
login of --password-file (basic auth; anything else gets 401). Every sample carries the host and the GPU (index and UUID); per-process
GPU memory also says what holds the GPU:

``notebook``        a container of a JupyterHub server (its environment names the hub user)
``swarm_service``   another Swarm task's container (the service's name)
``container``       another Docker container (its name)
``spark_executor``  a Spark executor outside containers (holder: its application id)
``process``         any other process (holder: its command name)
``unknown``         the process was gone before it could be looked at

A container's labels and environment come from the Docker engine's API on its Unix socket; only the
hub user's name is kept from the environment (it also holds the server's API token). A GPU that
NVML cannot reach any more (fallen off the bus, "GPU is lost") is reported with up 0 and no other
sample, and the exporter keeps serving the others. The Swarm GPU shares handed to the host's running
containers (their DOCKER_RESOURCE_<kind> variables) are reported with their holders whether or not
NVML answers: who holds which GPU, before any process of theirs touches it. Xid critical errors are counted from NVML's
event set by a thread of their own, since the last start of the exporter.

Only the standard library and ``pynvml`` (NVIDIA's nvidia-ml-py) are needed.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import http.client
import http.server
import json
import os
import pwd
import re
import socket
import ssl
import sys
import threading

HOLDER_KINDS = ("notebook", "swarm_service", "container", "spark_executor", "process", "unknown")
_CONTAINER_ID = re.compile(r"(?:/docker-|/docker/|/moby/|cri-containerd-)([0-9a-f]{64})(?:\.scope)?(?:/|$)")
_SPARK_EXECUTOR = "org.apache.spark.executor."
_HUB_USER_ENV = "JUPYTERHUB_USER="
# How Swarm hands a task its generic resources: DOCKER_RESOURCE_<kind>=<id>[,<id>...].
_SWARM_RESOURCE_ENV = "DOCKER_RESOURCE_"
_SWARM_SERVICE_LABEL = "com.docker.swarm.service.name"

# name, type, help: the order of the exposition.
METRICS = (
    ("sparkfleet_gpu_nvml_up", "gauge", "1 when NVML (the NVIDIA driver) answers on the host."),
    ("sparkfleet_gpu_up", "gauge", "1 when NVML answers for the GPU, 0 when it is lost."),
    ("sparkfleet_gpu_info", "gauge", "The GPU's model and driver, value 1."),
    ("sparkfleet_gpu_utilization_ratio", "gauge", "Time the GPU ran a kernel over the last sample period (0-1)."),
    ("sparkfleet_gpu_memory_utilization_ratio", "gauge", "Time the GPU's memory was read or written over the last sample period (0-1)."),
    ("sparkfleet_gpu_memory_used_bytes", "gauge", "GPU memory in use."),
    ("sparkfleet_gpu_memory_total_bytes", "gauge", "GPU memory installed."),
    ("sparkfleet_gpu_temperature_celsius", "gauge", "GPU core temperature."),
    ("sparkfleet_gpu_power_watts", "gauge", "Power the GPU draws."),
    ("sparkfleet_gpu_ecc_errors_total", "counter",
     "ECC errors, volatile (since the driver loaded) and aggregate (the GPU's lifetime)."),
    ("sparkfleet_gpu_xid_errors_total", "counter", "Xid critical errors NVML reported since the exporter started."),
    ("sparkfleet_gpu_xid_events_supported", "gauge", "1 when NVML delivers Xid events for the GPU."),
    ("sparkfleet_gpu_process_memory_used_bytes", "gauge", "GPU memory of each process using the GPU, and who holds it."),
    ("sparkfleet_gpu_share_holder", "gauge", "A Swarm GPU share handed to a running container, and who holds it; value 1."),
)


def _escape(value):
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(pairs):
    return "{" + ",".join('%s="%s"' % (name, _escape(value)) for name, value in pairs) + "}"


def _number(value):
    return repr(value) if isinstance(value, float) else "%d" % value


def _text(value):
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _user_name(uid):
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


class DockerClient:
    """The few calls of the Docker engine's API the exporter makes, over its Unix socket."""

    def __init__(self, socket_path="/run/docker.sock", timeout=2.0):
        self.socket_path = socket_path
        self.timeout = timeout

    def _get(self, path):
        connection = _UnixHTTPConnection(self.socket_path, self.timeout)
        try:
            connection.request("GET", path, headers={"Host": "docker"})
            response = connection.getresponse()
            body = response.read()
        except OSError:
            return None
        finally:
            connection.close()
        if response.status != 200:
            return None
        return json.loads(body)

    def inspect_container(self, container_id):
        """``GET /containers/<id>/json``: the container's description, or None when there is none."""
        return self._get("/containers/%s/json" % container_id)

    def running_containers(self):
        """``GET /containers/json``: the ids of the running containers ([] when the engine does not answer)."""
        return [container["Id"] for container in self._get("/containers/json") or []]


class _UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout):
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self._path)
        self.sock = sock


class Holders:
    """What holds a GPU process: read from /proc and, for a container, from the Docker engine."""

    def __init__(self, docker, proc_root="/proc", user_name=None):
        self.docker = docker
        self.proc_root = proc_root
        self.user_name = user_name or _user_name
        self._containers = {}

    def _read(self, pid, name):
        with open(os.path.join(self.proc_root, str(pid), name), "rb") as handle:
            return handle.read()

    def _owner(self, pid):
        try:
            for line in self._read(pid, "status").decode("utf-8", "replace").splitlines():
                if line.startswith("Uid:"):
                    return self.user_name(int(line.split()[1]))
        except OSError:
            pass
        return ""

    def _container(self, container_id):
        if container_id not in self._containers:
            self._containers[container_id] = self.docker.inspect_container(container_id) if self.docker else None
        return self._containers[container_id]

    def forget_containers(self):
        """Drop what was learnt of containers: asked again at the next scrape (a new server, a new name)."""
        self._containers = {}

    def holder(self, pid):
        """``(holder_kind, holder, user)`` of a process."""
        try:
            cgroup = self._read(pid, "cgroup").decode("utf-8", "replace")
            cmdline = [_text(arg) for arg in self._read(pid, "cmdline").split(b"\0") if arg]
        except OSError:
            return "unknown", "", ""
        match = _CONTAINER_ID.search(cgroup)
        if match:
            return self._container_holder(match.group(1), pid)
        if any(arg.startswith(_SPARK_EXECUTOR) for arg in cmdline):
            app_id = cmdline[cmdline.index("--app-id") + 1] if "--app-id" in cmdline[:-1] else ""
            return "spark_executor", app_id, self._owner(pid)
        try:
            command = self._read(pid, "comm").decode("utf-8", "replace").strip()
        except OSError:
            command = os.path.basename(cmdline[0]) if cmdline else ""
        return "process", command, self._owner(pid)

    def shares(self):
        """``(kind, share, holder_kind, holder, user)`` of every Swarm generic resource handed to a running
        container of the host."""
        found = []
        for container_id in (self.docker.running_containers() if self.docker else []):
            info = self._container(container_id)
            if not info:
                continue
            kind, holder, user = self._describe(info, container_id, "")
            for entry in (info.get("Config") or {}).get("Env") or []:
                name, _sep, ids = entry.partition("=")
                if name.startswith(_SWARM_RESOURCE_ENV):
                    found.extend((name[len(_SWARM_RESOURCE_ENV):], share, kind, holder, user)
                                 for share in ids.split(",") if share)
        return sorted(found)

    def _container_holder(self, container_id, pid):
        info = self._container(container_id)
        if not info:
            return "container", container_id[:12], self._owner(pid)
        return self._describe(info, container_id, pid)

    def _describe(self, info, container_id, pid):
        config = info.get("Config") or {}
        labels = config.get("Labels") or {}
        hub_user = next((entry[len(_HUB_USER_ENV):] for entry in config.get("Env") or []
                         if entry.startswith(_HUB_USER_ENV)), "")
        service = labels.get(_SWARM_SERVICE_LABEL, "")
        name = (info.get("Name") or "").lstrip("/") or container_id[:12]
        if hub_user:
            return "notebook", service or name, hub_user
        owner = self._owner(pid) if pid else ""
        if service:
            return "swarm_service", service, owner
        return "container", name, owner


class Collector:
    """Reads every GPU through NVML and writes the exposition."""

    def __init__(self, nvml, host, holders):
        self.nvml = nvml
        self.host = host
        self.holders = holders
        self.xid_counts = {}
        self.xid_supported = {}
        self.event_set = None
        self.driver = ""
        self.started = False
        self.nvml_problem = ""
        self._lock = threading.Lock()
        self._collect_lock = threading.Lock()

    # --- NVML's errors ----------------------------------------------------------------------
    def _code(self, err):
        return getattr(err, "value", None)

    def _is(self, err, name):
        return self._code(err) == getattr(self.nvml, name, object())

    def _optional(self, call, *args):
        """A reading the GPU may not give (power or ECC on some models, utilisation under MIG), or that fails
        for a reason of its own: None then. A lost GPU is raised: nothing more can be read from it."""
        try:
            return call(*args)
        except self.nvml.NVMLError as err:
            if self._is(err, "NVML_ERROR_GPU_IS_LOST"):
                raise
            return None

    # --- Xid events --------------------------------------------------------------------------
    def start(self):
        """Initialise NVML and register every GPU for Xid critical errors; False when NVML cannot start
        (no driver loaded, a driver/library mismatch after an upgrade): the next scrape tries again."""
        try:
            self.nvml.nvmlInit()
        except self.nvml.NVMLError as err:
            self.nvml_problem = str(err) or "NVML error %s" % self._code(err)
            return False
        self.nvml_problem = ""
        self.started = True
        self.event_set = self.nvml.nvmlEventSetCreate()
        for index in range(self.nvml.nvmlDeviceGetCount()):
            try:
                handle = self.nvml.nvmlDeviceGetHandleByIndex(index)
                uuid = _text(self.nvml.nvmlDeviceGetUUID(handle))
            except self.nvml.NVMLError:
                continue
            try:
                self.nvml.nvmlDeviceRegisterEvents(handle, self.nvml.nvmlEventTypeXidCriticalError, self.event_set)
                self.xid_supported[uuid] = 1
            except self.nvml.NVMLError:
                self.xid_supported[uuid] = 0
        return True

    def poll_events(self, timeout_ms=5000):
        """Wait for one event and count it if it is an Xid; True when one was counted. NVML keeps the
        events that come between two waits, so none is lost while a scrape runs."""
        try:
            event = self.nvml.nvmlEventSetWait(self.event_set, timeout_ms)
        except self.nvml.NVMLError as err:
            if self._is(err, "NVML_ERROR_TIMEOUT"):
                return False
            raise
        if not event.eventType & self.nvml.nvmlEventTypeXidCriticalError:
            return False
        try:
            uuid = _text(self.nvml.nvmlDeviceGetUUID(event.device))
        except self.nvml.NVMLError:
            uuid = ""
        with self._lock:
            key = (uuid, int(event.eventData))
            self.xid_counts[key] = self.xid_counts.get(key, 0) + 1
        return True

    def watch_events(self, stop):
        while not stop.is_set():
            if not self.started:
                stop.wait(30)
                continue
            try:
                self.poll_events()
            except self.nvml.NVMLError:
                # The wait itself fails (a lost GPU, a driver without events): try again later, not in a loop.
                stop.wait(30)

    # --- One scrape --------------------------------------------------------------------------
    def _gpu(self, index):
        """``(labels, samples)`` of one GPU: samples are (metric, extra labels, value)."""
        nvml = self.nvml
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        uuid = _text(nvml.nvmlDeviceGetUUID(handle))
        base = [("host", self.host), ("gpu", str(index)), ("uuid", uuid)]
        try:
            name = _text(self._optional(nvml.nvmlDeviceGetName, handle) or "")
            utilization = self._optional(nvml.nvmlDeviceGetUtilizationRates, handle)
            memory = self._optional(nvml.nvmlDeviceGetMemoryInfo, handle)
            temperature = self._optional(nvml.nvmlDeviceGetTemperature, handle, nvml.NVML_TEMPERATURE_GPU)
            power = self._optional(nvml.nvmlDeviceGetPowerUsage, handle)
            ecc = []
            for counter_name, counter in (("volatile", nvml.NVML_VOLATILE_ECC), ("aggregate", nvml.NVML_AGGREGATE_ECC)):
                for error_name, error in (("corrected", nvml.NVML_MEMORY_ERROR_TYPE_CORRECTED),
                                          ("uncorrected", nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED)):
                    value = self._optional(nvml.nvmlDeviceGetTotalEccErrors, handle, error, counter)
                    if value is not None:
                        ecc.append(([("error", error_name), ("counter", counter_name)], value))
            processes = self._optional(nvml.nvmlDeviceGetComputeRunningProcesses, handle) or []
        except nvml.NVMLError:
            # Only a lost GPU gets here (_optional): the others' readings still go out.
            return base, [("sparkfleet_gpu_up", [], 0)]
        # A reading the GPU does not give (utilisation of a GPU split into MIG instances, power or ECC
        # of some models) is left out, not reported as 0.
        samples = [("sparkfleet_gpu_up", [], 1), ("sparkfleet_gpu_info", [("name", name), ("driver", self.driver)], 1)]
        if utilization is not None:
            samples += [("sparkfleet_gpu_utilization_ratio", [], utilization.gpu / 100.0),
                        ("sparkfleet_gpu_memory_utilization_ratio", [], utilization.memory / 100.0)]
        if memory is not None:
            samples += [("sparkfleet_gpu_memory_used_bytes", [], int(memory.used)),
                        ("sparkfleet_gpu_memory_total_bytes", [], int(memory.total))]
        if temperature is not None:
            samples.append(("sparkfleet_gpu_temperature_celsius", [], int(temperature)))
        if power is not None:
            samples.append(("sparkfleet_gpu_power_watts", [], power / 1000.0))
        samples += [("sparkfleet_gpu_ecc_errors_total", extra, int(value)) for extra, value in ecc]
        with self._lock:
            xids = sorted((xid, count) for (xid_uuid, xid), count in self.xid_counts.items() if xid_uuid == uuid)
        samples += [("sparkfleet_gpu_xid_errors_total", [("xid", str(xid))], count) for xid, count in xids]
        samples.append(("sparkfleet_gpu_xid_events_supported", [], self.xid_supported.get(uuid, 0)))
        for process in sorted(processes, key=lambda p: p.pid):
            kind, holder, user = self.holders.holder(process.pid)
            used = process.usedGpuMemory
            samples.append(("sparkfleet_gpu_process_memory_used_bytes",
                            [("pid", str(process.pid)), ("holder_kind", kind), ("holder", holder), ("user", user)],
                            int(used) if used is not None else 0))
        return base, samples

    def collect(self):
        """The exposition text of every GPU of the host. One scrape at a time: they share NVML's start,
        the driver's version and what was learnt of containers."""
        with self._collect_lock:
            return self._collect()

    def _collect(self):
        self.holders.forget_containers()
        by_metric = {name: [] for name, _kind, _help in METRICS}
        by_metric["sparkfleet_gpu_share_holder"] = [
            ([("host", self.host), ("kind", kind), ("share", share), ("holder_kind", holder_kind), ("holder", holder), ("user", user)], 1)
            for kind, share, holder_kind, holder, user in self.holders.shares()]
        if not self.started and not self.start():
            by_metric["sparkfleet_gpu_nvml_up"].append(([("host", self.host)], 0))
            return self._exposition(by_metric)
        self.driver = _text(self._optional(self.nvml.nvmlSystemGetDriverVersion) or "")
        by_metric["sparkfleet_gpu_nvml_up"].append(([("host", self.host)], 1))
        for index in range(self.nvml.nvmlDeviceGetCount()):
            try:
                base, samples = self._gpu(index)
            except self.nvml.NVMLError:
                # Lost (or unreachable otherwise) before even its UUID could be read.
                base, samples = [("host", self.host), ("gpu", str(index)), ("uuid", "")], [("sparkfleet_gpu_up", [], 0)]
            for metric, extra, value in samples:
                by_metric[metric].append((base + extra, value))
        return self._exposition(by_metric)

    @staticmethod
    def _exposition(by_metric):
        lines = []
        for name, kind, help_text in METRICS:
            if not by_metric[name]:
                continue
            lines.append("# HELP %s %s" % (name, help_text))
            lines.append("# TYPE %s %s" % (name, kind))
            lines.extend("%s%s %s" % (name, _labels(labels), _number(value)) for labels, value in by_metric[name])
        return "\n".join(lines) + "\n"


def check_password(line, user, password):
    """Whether ``user:password`` matches one line ``<user>:pbkdf2-sha256$<iterations>$<salt b64>$<hash b64>``."""
    try:
        name, scheme, iterations, salt, digest = re.split(r"[:$]", line.strip(), maxsplit=4)
        if scheme != "pbkdf2-sha256":
            return False
        expected = base64.b64decode(digest)
        actual = hashlib.pbkdf2_hmac("sha256", password.encode(), base64.b64decode(salt), int(iterations))
    except ValueError:
        return False
    return hmac.compare_digest(name.encode(), user.encode()) and hmac.compare_digest(expected, actual)


def make_handler(collector, password_file=None):
    class Handler(http.server.BaseHTTPRequestHandler):
        server_version = "sparkfleet-gpu-exporter"

        def log_message(self, *args):  # pylint: disable=arguments-differ
            # A scrape every few seconds would flood the journal; errors still go to stderr.
            pass

        def _allowed(self):
            if not password_file:
                return True
            header = self.headers.get("Authorization", "")
            if not header.startswith("Basic "):
                return False
            try:
                user, _sep, password = base64.b64decode(header[6:]).decode("utf-8").partition(":")
                with open(password_file, "r", encoding="utf-8") as handle:
                    return any(check_password(line, user, password) for line in handle if line.strip())
            except (ValueError, OSError):
                return False

        def _send(self, status, body, content_type="text/plain; charset=utf-8", headers=()):
            data = body.encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):  # pylint: disable=invalid-name
            if not self._allowed():
                self._send(401, "login required\n", headers=[("WWW-Authenticate", 'Basic realm="gpu exporter"')])
            elif self.path.split("?", 1)[0] == "/metrics":
                try:
                    body = collector.collect()
                except Exception as err:  # pylint: disable=broad-except
                    self._send(500, "collecting failed: %s\n" % err)
                    return
                self._send(200, body, "text/plain; version=0.0.4; charset=utf-8")
            else:
                self._send(404, "GPU metrics are at /metrics\n")

    return Handler


def _address(text):
    host, _sep, port = text.rpartition(":")
    return host.strip("[]"), int(port)


def tls_context(cert_file, key_file):
    """The server's TLS settings: the certificate and key (from the cluster CA), TLS 1.2 or later."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert_file, key_file)
    return context


class _Server(http.server.ThreadingHTTPServer):
    """HTTP, or HTTPS with ``tls``: the handshake runs in the request's own thread, so a client that
    stalls it (or speaks plain HTTP) holds up no other scrape."""

    tls = None
    # A client that never finishes its handshake or request is dropped.
    timeout_s = 30

    def finish_request(self, request, client_address):
        request.settimeout(self.timeout_s)
        if self.tls is not None:
            try:
                request = self.tls.wrap_socket(request, server_side=True)
            except (ssl.SSLError, OSError):
                # No TLS (a plain HTTP request), an old protocol, a client gone: refused, no answer.
                return
        super().finish_request(request, client_address)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="sparkfleet's GPU exporter (NVML, Prometheus text format)")
    parser.add_argument("--listen", required=True, help="address:port to serve /metrics on (the host's private address)")
    parser.add_argument("--docker-socket", default="/run/docker.sock", help="the Docker engine's API socket ('' for none)")
    parser.add_argument("--password-file", default="", help="lines user:pbkdf2-sha256$<iterations>$<salt>$<hash>: basic auth")
    parser.add_argument("--tls-cert", default="", help="the server's certificate (PEM, chain after it): serve HTTPS")
    parser.add_argument("--tls-key", default="", help="its key (PEM)")
    parser.add_argument("--host", default=socket.gethostname(), help="the host label's value")
    args = parser.parse_args(argv)
    if bool(args.tls_cert) != bool(args.tls_key):
        parser.error("--tls-cert and --tls-key go together")
    return args


def build_server(args, collector):
    """The server of ``args`` (parse_args) for ``collector``, bound and ready to serve."""
    host, port = _address(args.listen)
    attributes = {"address_family": socket.AF_INET6} if ":" in host else {}
    if args.tls_cert:
        attributes["tls"] = tls_context(args.tls_cert, args.tls_key)
    server_class = type("Server", (_Server,), attributes)
    return server_class((host, port), make_handler(collector, args.password_file or None))


def main(argv=None):
    args = parse_args(argv)

    import pynvml  # pylint: disable=import-outside-toplevel

    docker = DockerClient(args.docker_socket) if args.docker_socket else None
    collector = Collector(pynvml, args.host, Holders(docker))
    if not collector.start():
        print("NVML cannot start (%s): serving sparkfleet_gpu_nvml_up 0 until it can" % collector.nvml_problem,
              file=sys.stderr, flush=True)
    stop = threading.Event()
    threading.Thread(target=collector.watch_events, args=(stop,), daemon=True, name="xid-events").start()
    server = build_server(args, collector)
    try:
        server.serve_forever()
    finally:
        stop.set()
        if collector.started:
            pynvml.nvmlShutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
