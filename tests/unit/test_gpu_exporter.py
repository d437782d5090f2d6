"""The GPU exporter (roles/gpu_exporter/files/sparkfleet_gpu_exporter.py) on recorded NVML readings, a fake
/proc and a recorded Docker API answer: no GPU, no engine. The stand-in for pynvml keeps NVML's names,
constants and return shapes (nvidia-ml-py's pynvml.py) and is fed from tests/unit/fixtures/gpu_exporter."""

import base64
import hashlib
import http.server
import importlib.util
import json
import socketserver
import sys
import threading
import types
import urllib.error
import urllib.request

import pytest

from conftest import ROOT

FIXTURES = ROOT / "tests" / "unit" / "fixtures" / "gpu_exporter"
NOTEBOOK_CONTAINER = json.loads((FIXTURES / "docker_notebook_container.json").read_text())
NOTEBOOK_CONTAINER_ID = NOTEBOOK_CONTAINER["Id"]


def _load_exporter():
    path = ROOT / "roles" / "gpu_exporter" / "files" / "sparkfleet_gpu_exporter.py"
    spec = importlib.util.spec_from_file_location("sparkfleet_gpu_exporter", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


exporter = _load_exporter()


class NVMLError(Exception):
    """As pynvml's: the NVML return code in ``value``."""

    def __init__(self, value):
        super().__init__(value)
        self.value = value


def fake_pynvml(recorded):
    """A pynvml stand-in answering from ``recorded`` (nvml_*.json). ``recorded['lost']``: indexes of GPUs
    NVML has lost (every per-GPU call raises NVML_ERROR_GPU_IS_LOST, as pynvml's NVMLError_GpuIsLost)."""
    nvml = types.ModuleType("pynvml")
    nvml.NVMLError = NVMLError
    nvml.NVML_ERROR_NOT_SUPPORTED = 3
    nvml.NVML_ERROR_TIMEOUT = 10
    nvml.NVML_ERROR_GPU_IS_LOST = 15
    nvml.NVML_TEMPERATURE_GPU = 0
    nvml.NVML_VOLATILE_ECC = 0
    nvml.NVML_AGGREGATE_ECC = 1
    nvml.NVML_MEMORY_ERROR_TYPE_CORRECTED = 0
    nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
    nvml.nvmlEventTypeXidCriticalError = 0x8
    nvml.events = []  # what nvmlEventSetWait hands out next
    gpus = recorded["gpus"]
    lost = set(recorded.get("lost", []))
    counters = {0: "volatile", 1: "aggregate"}
    errors = {0: "corrected", 1: "uncorrected"}

    class Handle:
        def __init__(self, index):
            self.index = index

    def gpu(handle):
        if handle.index in lost:
            raise NVMLError(nvml.NVML_ERROR_GPU_IS_LOST)
        return gpus[handle.index]

    def friendly(**fields):
        return types.SimpleNamespace(**fields)

    def power(handle):
        value = gpu(handle)["power_mw"]
        if value is None:
            raise NVMLError(nvml.NVML_ERROR_NOT_SUPPORTED)
        return value

    def wait(_event_set, _timeout_ms):
        if not nvml.events:
            raise NVMLError(nvml.NVML_ERROR_TIMEOUT)
        index, event_type, xid = nvml.events.pop(0)
        return friendly(device=Handle(index), eventType=event_type, eventData=xid, gpuInstanceId=0, computeInstanceId=0)

    nvml.nvmlInit = lambda: None
    nvml.nvmlShutdown = lambda: None
    nvml.nvmlSystemGetDriverVersion = lambda: recorded["driver"]
    nvml.nvmlDeviceGetCount = lambda: len(gpus)
    nvml.nvmlDeviceGetHandleByIndex = Handle
    nvml.nvmlDeviceGetUUID = lambda h: gpu(h)["uuid"]
    nvml.nvmlDeviceGetName = lambda h: gpu(h)["name"]
    nvml.nvmlDeviceGetUtilizationRates = lambda h: friendly(**gpu(h)["utilization"])
    nvml.nvmlDeviceGetMemoryInfo = lambda h: friendly(**gpu(h)["memory"])
    nvml.nvmlDeviceGetTemperature = lambda h, sensor: gpu(h)["temperature"]
    nvml.nvmlDeviceGetPowerUsage = power
    nvml.nvmlDeviceGetTotalEccErrors = lambda h, error, counter: gpu(h)["ecc"][counters[counter]][errors[error]]
    nvml.nvmlDeviceGetComputeRunningProcesses = lambda h: [
        friendly(pid=p["pid"], usedGpuMemory=p["usedGpuMemory"], gpuInstanceId=0xFFFFFFFF, computeInstanceId=0xFFFFFFFF)
        for p in gpu(h)["processes"]]
    nvml.nvmlEventSetCreate = object
    nvml.nvmlDeviceRegisterEvents = lambda h, types_, event_set: gpu(h)
    nvml.nvmlEventSetWait = wait
    return nvml


class FakeDocker:
    def __init__(self, containers):
        self.containers = containers
        self.asked = []

    def inspect_container(self, container_id):
        self.asked.append(container_id)
        return self.containers.get(container_id)

    def running_containers(self):
        return list(self.containers)


SPARK_EXECUTOR_CMDLINE = [
    "/usr/lib/jvm/java-17-openjdk-amd64/bin/java", "-cp", "/etc/spark/conf/:/opt/spark/current/jars/*", "-Xmx8192M",
    "-Dspark.driver.port=40123", "org.apache.spark.executor.CoarseGrainedExecutorBackend",
    "--driver-url", "spark://CoarseGrainedScheduler@10.0.0.3:40123", "--executor-id", "3", "--hostname", "10.0.0.7",
    "--cores", "4", "--app-id", "app-20261128231500-0007", "--resourcesFile",
    "/var/lib/spark/work/app-20261128231500-0007/3/resource-executor-3.json",
]


def fake_proc(root):
    """/proc with the notebook's Python (in its Swarm task container) and a Spark executor (the worker's child)."""
    processes = {
        4242: {"cgroup": "0::/system.slice/docker-%s.scope\n" % NOTEBOOK_CONTAINER_ID,
               "cmdline": ["/opt/conda/bin/python", "-m", "ipykernel_launcher", "-f", "/tmp/kernel.json"],
               "uid": 1000, "comm": "python"},
        5150: {"cgroup": "0::/system.slice/spark-worker.service\n", "cmdline": SPARK_EXECUTOR_CMDLINE,
               "uid": 996, "comm": "java"},
        6000: {"cgroup": "0::/user.slice/user-1001.slice/session-4.scope\n", "cmdline": ["./train", "--epochs", "3"],
               "uid": 1001, "comm": "train"},
    }
    for pid, process in processes.items():
        directory = root / str(pid)
        directory.mkdir(parents=True)
        (directory / "cgroup").write_text(process["cgroup"])
        (directory / "cmdline").write_bytes(b"\0".join(a.encode() for a in process["cmdline"]) + b"\0")
        (directory / "status").write_text("Name:\t%s\nUid:\t%d\t%d\t%d\t%d\n" % ((process["comm"],) + (process["uid"],) * 4))
        (directory / "comm").write_text(process["comm"] + "\n")
    return root


USERS = {1000: "jovyan", 996: "spark", 1001: "bob"}


@pytest.fixture
def recorded():
    return json.loads((FIXTURES / "nvml_t4_x2.json").read_text())


@pytest.fixture
def collector_for(tmp_path):
    def make(recorded, docker=None):
        holders = exporter.Holders(docker or FakeDocker({NOTEBOOK_CONTAINER_ID: NOTEBOOK_CONTAINER}),
                                   proc_root=str(fake_proc(tmp_path / "proc")), user_name=USERS.get)
        collector = exporter.Collector(fake_pynvml(recorded), "gpu-worker-1", holders)
        collector.start()
        return collector
    return make


G0 = 'host="gpu-worker-1",gpu="0",uuid="GPU-6f1ee8a1-3d54-2c1b-8e7a-0b8a4c3b9d10"'
G1 = 'host="gpu-worker-1",gpu="1",uuid="GPU-a2c94f7e-5b60-4e3f-9d2a-7c1f0e8b6a55"'

EXPECTED_TWO_GPUS = f"""\
# HELP sparkfleet_gpu_nvml_up 1 when NVML (the NVIDIA driver) answers on the host.
# TYPE sparkfleet_gpu_nvml_up gauge
sparkfleet_gpu_nvml_up{{host="gpu-worker-1"}} 1
# HELP sparkfleet_gpu_up 1 when NVML answers for the GPU, 0 when it is lost.
# TYPE sparkfleet_gpu_up gauge
sparkfleet_gpu_up{{{G0}}} 1
sparkfleet_gpu_up{{{G1}}} 1
# HELP sparkfleet_gpu_info The GPU's model and driver, value 1.
# TYPE sparkfleet_gpu_info gauge
sparkfleet_gpu_info{{{G0},name="Tesla T4",driver="550.54.15"}} 1
sparkfleet_gpu_info{{{G1},name="Tesla T4",driver="550.54.15"}} 1
# HELP sparkfleet_gpu_utilization_ratio Time the GPU ran a kernel over the last sample period (0-1).
# TYPE sparkfleet_gpu_utilization_ratio gauge
sparkfleet_gpu_utilization_ratio{{{G0}}} 0.37
sparkfleet_gpu_utilization_ratio{{{G1}}} 0.0
# HELP sparkfleet_gpu_memory_utilization_ratio Time the GPU's memory was read or written over the last sample period (0-1).
# TYPE sparkfleet_gpu_memory_utilization_ratio gauge
sparkfleet_gpu_memory_utilization_ratio{{{G0}}} 0.12
sparkfleet_gpu_memory_utilization_ratio{{{G1}}} 0.0
# HELP sparkfleet_gpu_memory_used_bytes GPU memory in use.
# TYPE sparkfleet_gpu_memory_used_bytes gauge
sparkfleet_gpu_memory_used_bytes{{{G0}}} 4294967296
sparkfleet_gpu_memory_used_bytes{{{G1}}} 272629760
# HELP sparkfleet_gpu_memory_total_bytes GPU memory installed.
# TYPE sparkfleet_gpu_memory_total_bytes gauge
sparkfleet_gpu_memory_total_bytes{{{G0}}} 16106127360
sparkfleet_gpu_memory_total_bytes{{{G1}}} 16106127360
# HELP sparkfleet_gpu_temperature_celsius GPU core temperature.
# TYPE sparkfleet_gpu_temperature_celsius gauge
sparkfleet_gpu_temperature_celsius{{{G0}}} 54
sparkfleet_gpu_temperature_celsius{{{G1}}} 31
# HELP sparkfleet_gpu_power_watts Power the GPU draws.
# TYPE sparkfleet_gpu_power_watts gauge
sparkfleet_gpu_power_watts{{{G0}}} 27.843
# HELP sparkfleet_gpu_ecc_errors_total ECC errors, volatile (since the driver loaded) and aggregate (the GPU's lifetime).
# TYPE sparkfleet_gpu_ecc_errors_total counter
sparkfleet_gpu_ecc_errors_total{{{G0},error="corrected",counter="volatile"}} 0
sparkfleet_gpu_ecc_errors_total{{{G0},error="uncorrected",counter="volatile"}} 0
sparkfleet_gpu_ecc_errors_total{{{G0},error="corrected",counter="aggregate"}} 3
sparkfleet_gpu_ecc_errors_total{{{G0},error="uncorrected",counter="aggregate"}} 0
sparkfleet_gpu_ecc_errors_total{{{G1},error="corrected",counter="volatile"}} 0
sparkfleet_gpu_ecc_errors_total{{{G1},error="uncorrected",counter="volatile"}} 0
sparkfleet_gpu_ecc_errors_total{{{G1},error="corrected",counter="aggregate"}} 0
sparkfleet_gpu_ecc_errors_total{{{G1},error="uncorrected",counter="aggregate"}} 0
# HELP sparkfleet_gpu_xid_events_supported 1 when NVML delivers Xid events for the GPU.
# TYPE sparkfleet_gpu_xid_events_supported gauge
sparkfleet_gpu_xid_events_supported{{{G0}}} 1
sparkfleet_gpu_xid_events_supported{{{G1}}} 1
# HELP sparkfleet_gpu_process_memory_used_bytes GPU memory of each process using the GPU, and who holds it.
# TYPE sparkfleet_gpu_process_memory_used_bytes gauge
sparkfleet_gpu_process_memory_used_bytes{{{G0},pid="4242",holder_kind="notebook",holder="jupyter-alice",user="alice"}} 3221225472
sparkfleet_gpu_process_memory_used_bytes{{{G0},pid="5150",holder_kind="spark_executor",holder="app-20261128231500-0007",user="spark"}} 1073741824
# HELP sparkfleet_gpu_share_holder A Swarm GPU share handed to a running container, and who holds it; value 1.
# TYPE sparkfleet_gpu_share_holder gauge
sparkfleet_gpu_share_holder{{host="gpu-worker-1",kind="NVIDIA-GPU",share="GPU-6f1ee8a1-3d54-2c1b-8e7a-0b8a4c3b9d10",\
holder_kind="notebook",holder="jupyter-alice",user="alice"}} 1
"""


def test_two_gpus_with_a_notebook_and_a_spark_executor(recorded, collector_for):
    assert collector_for(recorded).collect() == EXPECTED_TWO_GPUS


def test_the_hub_token_in_the_containers_environment_is_never_exposed(recorded, collector_for):
    text = collector_for(recorded).collect()
    assert "JUPYTERHUB_API_TOKEN" not in text
    assert "0f3c9a7e5d1b4c2a8e6f0d9c7b5a3e1f" not in text


def test_an_xid_event_increments_its_gpus_counter(recorded, collector_for):
    collector = collector_for(recorded)
    assert "sparkfleet_gpu_xid_errors_total" not in collector.collect()
    collector.nvml.events = [(1, 0x8, 79), (1, 0x8, 79), (0, 0x8, 48)]
    assert [collector.poll_events(0) for _poll in range(4)] == [True, True, True, False]
    text = collector.collect()
    assert f'sparkfleet_gpu_xid_errors_total{{{G0},xid="48"}} 1\n' in text
    assert f'sparkfleet_gpu_xid_errors_total{{{G1},xid="79"}} 2\n' in text
    assert text.count("sparkfleet_gpu_xid_errors_total{") == 2


def test_an_event_other_than_an_xid_is_not_counted(recorded, collector_for):
    collector = collector_for(recorded)
    collector.nvml.events = [(0, 0x1, 0)]  # nvmlEventTypeSingleBitEccError
    assert collector.poll_events(0) is False
    assert "sparkfleet_gpu_xid_errors_total" not in collector.collect()


def test_a_lost_gpu_is_up_0_and_the_others_still_reported(recorded, collector_for):
    collector = collector_for(recorded)
    recorded["lost"] = [0]
    collector.nvml = fake_pynvml(recorded)
    text = collector.collect()
    assert 'sparkfleet_gpu_up{host="gpu-worker-1",gpu="0",uuid=""} 0\n' in text
    assert f"sparkfleet_gpu_up{{{G1}}} 1\n" in text
    assert 'gpu="0"' not in text.replace('sparkfleet_gpu_up{host="gpu-worker-1",gpu="0",uuid=""} 0', "")
    assert f"sparkfleet_gpu_temperature_celsius{{{G1}}} 31\n" in text


def test_a_gpu_lost_after_its_uuid_was_read_keeps_its_uuid(recorded, collector_for):
    collector = collector_for(recorded)
    nvml = collector.nvml
    lost_name = NVMLError(nvml.NVML_ERROR_GPU_IS_LOST)

    def name(handle):
        if handle.index == 1:
            raise lost_name
        return "Tesla T4"
    nvml.nvmlDeviceGetName = name
    text = collector.collect()
    assert f"sparkfleet_gpu_up{{{G1}}} 0\n" in text
    assert f"sparkfleet_gpu_up{{{G0}}} 1\n" in text


def test_a_reading_a_gpu_does_not_give_is_left_out(recorded, collector_for):
    collector = collector_for(recorded)

    def not_supported(handle):
        if handle.index == 1:
            raise NVMLError(collector.nvml.NVML_ERROR_NOT_SUPPORTED)  # utilisation of a GPU split into MIG instances
        return types.SimpleNamespace(**recorded["gpus"][0]["utilization"])
    collector.nvml.nvmlDeviceGetUtilizationRates = not_supported
    text = collector.collect()
    assert f"sparkfleet_gpu_utilization_ratio{{{G0}}} 0.37\n" in text
    assert f"sparkfleet_gpu_utilization_ratio{{{G1}}}" not in text
    assert f"sparkfleet_gpu_up{{{G1}}} 1\n" in text
    assert f"sparkfleet_gpu_memory_used_bytes{{{G1}}} 272629760\n" in text
    assert text == EXPECTED_TWO_GPUS.replace(f"sparkfleet_gpu_utilization_ratio{{{G1}}} 0.0\n", "").replace(
        f"sparkfleet_gpu_memory_utilization_ratio{{{G1}}} 0.0\n", "")


def test_holders_of_other_processes_and_containers(tmp_path):
    proc = fake_proc(tmp_path / "proc")
    docker = FakeDocker({})
    holders = exporter.Holders(docker, proc_root=str(proc), user_name=USERS.get)
    assert holders.holder(6000) == ("process", "train", "bob")
    assert holders.holder(7777) == ("unknown", "", "")
    # A container the engine no longer knows: its short id.
    assert holders.holder(4242) == ("container", NOTEBOOK_CONTAINER_ID[:12], "jovyan")
    service = json.loads(json.dumps(NOTEBOOK_CONTAINER))
    service["Config"]["Env"] = ["PATH=/usr/bin"]
    service["Config"]["Labels"]["com.docker.swarm.service.name"] = "etl"
    docker.containers[NOTEBOOK_CONTAINER_ID] = service
    holders.forget_containers()
    assert holders.holder(4242) == ("swarm_service", "etl", "jovyan")
    plain = {"Name": "/cuda-test", "Config": {"Env": [], "Labels": {}}}
    docker.containers[NOTEBOOK_CONTAINER_ID] = plain
    holders.forget_containers()
    assert holders.holder(4242) == ("container", "cuda-test", "jovyan")


def test_a_container_is_asked_once_per_scrape(recorded, collector_for):
    docker = FakeDocker({NOTEBOOK_CONTAINER_ID: NOTEBOOK_CONTAINER})
    recorded["gpus"][1]["processes"] = [{"pid": 4242, "usedGpuMemory": 1048576}]
    collector = collector_for(recorded, docker)
    collector.collect()
    assert docker.asked == [NOTEBOOK_CONTAINER_ID]
    collector.collect()
    assert docker.asked == [NOTEBOOK_CONTAINER_ID] * 2


def test_cgroup_v1_and_cgroupfs_paths_name_the_container(tmp_path):
    docker = FakeDocker({NOTEBOOK_CONTAINER_ID: NOTEBOOK_CONTAINER})
    proc = fake_proc(tmp_path / "proc")
    (proc / "4242" / "cgroup").write_text(
        "12:memory:/docker/%s\n11:cpu,cpuacct:/docker/%s\n" % (NOTEBOOK_CONTAINER_ID, NOTEBOOK_CONTAINER_ID))
    holders = exporter.Holders(docker, proc_root=str(proc), user_name=USERS.get)
    assert holders.holder(4242) == ("notebook", "jupyter-alice", "alice")


class _DockerAPI(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - the standard library's name
        if self.path == "/containers/%s/json" % NOTEBOOK_CONTAINER_ID:
            body, status = json.dumps(NOTEBOOK_CONTAINER).encode(), 200
        else:
            body, status = b'{"message":"No such container"}', 404
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class _UnixHTTPServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def get_request(self):
        request, _client = super().get_request()
        return request, ("docker", 0)


def test_the_docker_client_speaks_http_on_the_engines_socket(tmp_path):
    path = str(tmp_path / "docker.sock")
    server = _UnixHTTPServer(path, _DockerAPI)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        client = exporter.DockerClient(path)
        assert client.inspect_container(NOTEBOOK_CONTAINER_ID)["Config"]["Labels"]["com.docker.swarm.service.name"] == "jupyter-alice"
        assert client.inspect_container("0" * 64) is None
    finally:
        server.shutdown()
        server.server_close()
    assert exporter.DockerClient(str(tmp_path / "absent.sock")).inspect_container(NOTEBOOK_CONTAINER_ID) is None


def _password_line(user, password, salt=b"0123456789abcdef", iterations=1000):
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    return "%s:pbkdf2-sha256$%d$%s$%s" % (user, iterations, base64.b64encode(salt).decode(), base64.b64encode(digest).decode())


def test_check_password():
    line = _password_line("prometheus", "s3cret")
    assert exporter.check_password(line, "prometheus", "s3cret")
    assert not exporter.check_password(line, "prometheus", "wrong")
    assert not exporter.check_password(line, "other", "s3cret")
    assert not exporter.check_password("prometheus:plain$s3cret", "prometheus", "s3cret")
    assert not exporter.check_password("garbage", "prometheus", "s3cret")


@pytest.fixture
def served(recorded, collector_for, tmp_path):
    def serve(password_file=None):
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                                 exporter.make_handler(collector_for(recorded), password_file))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return "http://127.0.0.1:%d" % server.server_address[1]
    servers = []
    yield serve
    for server in servers:
        server.shutdown()
        server.server_close()


def _get(url, auth=None):
    request = urllib.request.Request(url)
    if auth:
        request.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, response.headers.get("Content-Type"), response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.headers.get("Content-Type"), err.read().decode()


def test_the_server_serves_metrics_and_nothing_else(served):
    base = served()
    status, content_type, body = _get(base + "/metrics")
    assert (status, content_type, body) == (200, "text/plain; version=0.0.4; charset=utf-8", EXPECTED_TWO_GPUS)
    assert _get(base + "/")[0] == 404
    assert _get(base + "/../etc/passwd")[0] == 404


def test_the_server_asks_for_a_login_when_given_a_password_file(served, tmp_path):
    password_file = tmp_path / "passwords"
    password_file.write_text(_password_line("prometheus", "s3cret") + "\n")
    base = served(str(password_file))
    assert _get(base + "/metrics")[0] == 401
    assert _get(base + "/metrics", "prometheus:wrong")[0] == 401
    status, _headers, body = _get(base + "/metrics", "prometheus:s3cret")
    assert (status, body) == (200, EXPECTED_TWO_GPUS)


def test_a_failing_event_wait_is_raised_and_the_watcher_keeps_going(recorded, collector_for):
    collector = collector_for(recorded)
    calls = []

    def wait(_event_set, _timeout_ms):
        calls.append(1)
        raise NVMLError(collector.nvml.NVML_ERROR_GPU_IS_LOST)
    collector.nvml.nvmlEventSetWait = wait
    with pytest.raises(NVMLError):
        collector.poll_events(0)
    stop = threading.Event()

    class Stop:
        """The watcher's stop event: set once it has failed to wait twice in its loop."""
        def is_set(self):
            return len(calls) >= 3

        def wait(self, _seconds):
            stop.set()
    collector.watch_events(Stop())
    assert len(calls) == 3 and stop.is_set()


def test_without_nvml_the_exporter_serves_nvml_up_0_and_tries_again(recorded, collector_for):
    nvml = fake_pynvml(recorded)
    failures = [NVMLError(9), NVMLError(9)]  # NVML_ERROR_DRIVER_NOT_LOADED, at start and at the first scrape

    def init():
        if failures:
            raise failures.pop()
    nvml.nvmlInit = init
    collector = exporter.Collector(nvml, "gpu-worker-1", exporter.Holders(FakeDocker({}), user_name=USERS.get))
    assert collector.start() is False
    assert collector.collect() == (
        "# HELP sparkfleet_gpu_nvml_up 1 when NVML (the NVIDIA driver) answers on the host.\n"
        "# TYPE sparkfleet_gpu_nvml_up gauge\n"
        'sparkfleet_gpu_nvml_up{host="gpu-worker-1"} 0\n')
    # The shares the Swarm handed to the host's containers are reported without NVML too.
    collector.holders = exporter.Holders(FakeDocker({NOTEBOOK_CONTAINER_ID: NOTEBOOK_CONTAINER}), user_name=USERS.get)
    failures.append(NVMLError(9))
    assert collector.collect() == (
        "# HELP sparkfleet_gpu_nvml_up 1 when NVML (the NVIDIA driver) answers on the host.\n"
        "# TYPE sparkfleet_gpu_nvml_up gauge\n"
        'sparkfleet_gpu_nvml_up{host="gpu-worker-1"} 0\n'
        "# HELP sparkfleet_gpu_share_holder A Swarm GPU share handed to a running container, and who holds it; value 1.\n"
        "# TYPE sparkfleet_gpu_share_holder gauge\n"
        'sparkfleet_gpu_share_holder{host="gpu-worker-1",kind="NVIDIA-GPU",share="GPU-6f1ee8a1-3d54-2c1b-8e7a-0b8a4c3b9d10",'
        'holder_kind="notebook",holder="jupyter-alice",user="alice"} 1\n')
    # The driver came back: the next scrape starts NVML and reports the GPUs.
    assert "sparkfleet_gpu_nvml_up{host=\"gpu-worker-1\"} 1\n" in collector.collect()
    assert collector.xid_supported == {"GPU-6f1ee8a1-3d54-2c1b-8e7a-0b8a4c3b9d10": 1, "GPU-a2c94f7e-5b60-4e3f-9d2a-7c1f0e8b6a55": 1}


def test_a_gpu_whose_uuid_cannot_be_read_is_up_0(recorded, collector_for):
    collector = collector_for(recorded)
    read_uuid = collector.nvml.nvmlDeviceGetUUID

    def uuid(handle):
        if handle.index == 0:
            raise NVMLError(999)  # NVML_ERROR_UNKNOWN
        return read_uuid(handle)
    collector.nvml.nvmlDeviceGetUUID = uuid
    text = collector.collect()
    assert 'sparkfleet_gpu_up{host="gpu-worker-1",gpu="0",uuid=""} 0\n' in text
    assert f"sparkfleet_gpu_up{{{G1}}} 1\n" in text


def test_scrapes_side_by_side_each_get_the_whole_exposition(served):
    base = served()
    results = []
    threads = [threading.Thread(target=lambda: results.append(_get(base + "/metrics"))) for _scrape in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [status for status, _headers, _body in results] == [200] * 8
    assert all(body == EXPECTED_TWO_GPUS for _status, _headers, body in results)
