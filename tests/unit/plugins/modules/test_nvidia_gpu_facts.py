"""nvidia_gpu_facts: nvidia-smi's output and the PCI bus, turned into facts with a state.

The fixtures under fixtures/nvidia_smi/ are nvidia-smi's output in its exact formats:
``<case>.csv`` answers the module's --query-gpu call, ``<case>.txt`` is a plain
``nvidia-smi`` (the header with the CUDA version), and the error cases are the
messages nvidia-smi prints.
"""

import json
import os
import pathlib
import subprocess
import sys

import pytest
from ansible.module_utils.testing import patch_module_args

from conftest import ROOT, load_plugin

FQ_UTILS = "ansible_collections.sparkfleet.cluster.plugins.module_utils.nvidia_gpu"
nvidia_gpu = load_plugin("module_utils", "nvidia_gpu")
# The module imports its module_utils by FQCN; serve the copy loaded by path.
sys.modules.setdefault(FQ_UTILS, nvidia_gpu)
facts_module = load_plugin("modules", "nvidia_gpu_facts")

FIXTURES = pathlib.Path(__file__).parent / "fixtures" / "nvidia_smi"
QUERY = ("--query-gpu=index,uuid,name,memory.total,driver_version,mig.mode.current,pci.bus_id",
         "--format=csv,noheader,nounits")


def fixture(name):
    return (FIXTURES / name).read_text()


# name, count, model, memory_mb, driver, cuda, mig_modes, PCI device id
MODELS = [
    ("a100_sxm4_40gb_x8", 8, "NVIDIA A100-SXM4-40GB", 40960, "535.104.05", "12.2", ["Disabled"] * 8, "0x20b0"),
    ("tesla_t4_x4", 4, "Tesla T4", 15109, "470.82.01", "11.4", [None] * 4, "0x1eb8"),
    ("tesla_v100_sxm2_16gb_x1", 1, "Tesla V100-SXM2-16GB", 16160, "450.80.02", "11.0", [None], "0x1db1"),
    ("h100_80gb_hbm3_x1", 1, "NVIDIA H100 80GB HBM3", 81559, "550.54.15", "12.4", ["Disabled"], "0x2330"),
    ("a100_80gb_pcie_mig", 2, "NVIDIA A100 80GB PCIe", 81920, "535.129.03", "12.2", ["Enabled", "Disabled"], "0x20b5"),
    ("geforce_workstation", 2, "NVIDIA GeForce RTX 3090", 24576, "545.29.06", "12.3", [None, None], "0x2204"),
]


def pci_of(case, device_id="0x20b0", driver="nvidia"):
    """The PCI devices scan_pci would find for the GPUs of a fixture."""
    gpus = nvidia_gpu.parse_query(fixture(f"{case}.csv"))[0]
    return [{"address": nvidia_gpu.normalize_pci_address(g["pci_bus_id"]), "vendor_id": "0x10de",
             "device_id": device_id, "class_code": "0x030200", "driver": driver} for g in gpus]


def facts_for(case, pci="match", rc=0, header=True):
    query = (rc, fixture(f"{case}.csv"), "")
    smi = (0, fixture(f"{case}.txt"), "") if header else None
    devices = pci_of(case) if pci == "match" else pci
    return nvidia_gpu.gpu_facts(devices, "/usr/bin/nvidia-smi", query, smi)


# --- parsing nvidia-smi ------------------------------------------------------------------


@pytest.mark.parametrize("case, count, model, memory_mb, driver, cuda, mig, device_id", MODELS)
def test_query_output_of_each_model(case, count, model, memory_mb, driver, cuda, mig, device_id):
    gpus, other = nvidia_gpu.parse_query(fixture(f"{case}.csv"))
    assert other == []
    assert len(gpus) == count
    assert [g["index"] for g in gpus] == list(range(count))
    assert gpus[0]["name"] == model and gpus[0]["memory_mb"] == memory_mb
    assert all(g["driver_version"] == driver for g in gpus)
    assert [g["mig_mode"] for g in gpus] == mig
    for g in gpus:
        assert g["uuid"].startswith("GPU-") and len(g["uuid"]) == 40
        assert nvidia_gpu.normalize_pci_address(g["pci_bus_id"])
    assert len({g["uuid"] for g in gpus}) == count
    assert nvidia_gpu.parse_cuda_version(fixture(f"{case}.txt")) == cuda
    assert nvidia_gpu.parse_driver_version(fixture(f"{case}.txt")) == driver


@pytest.mark.parametrize("case, count, model, memory_mb, driver, cuda, mig, device_id", MODELS)
def test_each_model_is_ok_when_pci_agrees(case, count, model, memory_mb, driver, cuda, mig, device_id):
    facts = facts_for(case)
    assert facts["state"] == "ok", facts["message"]
    assert facts["count"] == facts["expected_count"] == count
    assert facts["driver_version"] == driver and facts["cuda_version"] == cuda
    assert facts["problems"] == []
    assert model in facts["message"] and f"CUDA {cuda}" in facts["message"]
    assert all(d["reported"] for d in facts["pci_devices"])
    assert set(facts["gpus"][0]) == {"index", "uuid", "name", "memory_mb", "pci_bus_id", "mig_mode"}


def test_mig_host():
    facts = facts_for("a100_80gb_pcie_mig")
    assert [g["mig_mode"] for g in facts["gpus"]] == ["Enabled", "Disabled"]
    # The CUDA version is read from `nvidia-smi -q` as well.
    assert nvidia_gpu.parse_cuda_version(fixture("a100_80gb_pcie_mig.q.txt")) == "12.2"
    assert nvidia_gpu.parse_driver_version(fixture("a100_80gb_pcie_mig.q.txt")) == "535.129.03"


def test_geforce_placeholders_are_null():
    gpus = nvidia_gpu.parse_query(fixture("geforce_workstation.csv"))[0]
    assert [g["mig_mode"] for g in gpus] == [None, None]
    assert [g["memory_mb"] for g in gpus] == [24576, 11264]
    row = "0, GPU-00000000-1111-2222-3333-444444444444, NVIDIA GeForce GT 710, [Not Supported], 470.239.06, [N/A], 00000000:01:00.0\n"
    gpu = nvidia_gpu.parse_query(row)[0][0]
    assert gpu["memory_mb"] is None and gpu["mig_mode"] is None and gpu["name"] == "NVIDIA GeForce GT 710"


@pytest.mark.parametrize("raw, value", [
    ("[N/A]", None), ("N/A", None), ("[Not Supported]", None), ("[Unknown Error]", None),
    ("[Insufficient Permissions]", None), ("", None), ("  Enabled ", "Enabled"),
])
def test_placeholders(raw, value):
    assert nvidia_gpu.parse_value(raw) == value


def test_cuda_version_absent_or_na():
    assert nvidia_gpu.parse_cuda_version("| NVIDIA-SMI 470.82.01    Driver Version: 470.82.01    CUDA Version: N/A      |") is None
    assert nvidia_gpu.parse_cuda_version("") is None


@pytest.mark.parametrize("address, normal", [
    ("00000000:00:1E.0", "0000:00:1e.0"),
    ("00000000:3B:00.0", "0000:3b:00.0"),
    ("0000:00:1e.0", "0000:00:1e.0"),
    ("00000001:A0:1D.0", "0001:a0:1d.0"),
    ("garbage", None),
])
def test_pci_addresses_of_nvidia_smi_and_sysfs_agree(address, normal):
    assert nvidia_gpu.normalize_pci_address(address) == normal


@pytest.mark.parametrize("name, state, words", [
    ("no_devices.txt", "no_device", "No devices were found"),
    ("driver_mismatch.txt", "driver_mismatch", "535.183"),
    ("driver_not_loaded.txt", "driver_not_loaded", "kernel driver"),
    ("no_libnvidia_ml.txt", "driver_not_loaded", "libnvidia-ml.so"),
    ("nvml_unknown_error.txt", "error", "Failed to initialize NVML: Unknown Error"),
])
def test_error_messages_are_classified(name, state, words):
    got, message = nvidia_gpu.classify_failure(fixture(name))
    assert got == state
    assert words in message


# --- states ------------------------------------------------------------------------------


def failing(name, rc, pci=None, on_stderr=False):
    text = fixture(name)
    query = (rc, "", text) if on_stderr else (rc, text, "")
    return nvidia_gpu.gpu_facts(pci, "/usr/bin/nvidia-smi", query, None)


def test_no_binary():
    facts = nvidia_gpu.gpu_facts([], None)
    assert facts["state"] == "no_binary" and facts["count"] == 0 and facts["gpus"] == []
    assert "not installed" in facts["message"]
    assert facts["problems"] == []


def test_no_binary_on_a_host_that_should_have_gpus():
    facts = nvidia_gpu.gpu_facts(pci_of("tesla_t4_x4"), None)
    assert facts["state"] == "no_binary" and facts["expected_count"] == 4
    assert "PCI shows 4 NVIDIA GPUs" in facts["message"]
    assert not any(d["reported"] for d in facts["pci_devices"])


def test_no_device_on_a_host_without_gpus():
    facts = failing("no_devices.txt", 6, pci=[])
    assert facts["state"] == "no_device" and facts["count"] == 0 and facts["expected_count"] == 0


def test_no_device_while_pci_shows_one_is_a_missing_gpu():
    facts = failing("no_devices.txt", 6, pci=pci_of("tesla_v100_sxm2_16gb_x1"))
    assert facts["state"] == "missing_gpus"
    assert "PCI shows 1 NVIDIA GPU but nvidia-smi lists 0" in facts["message"]


@pytest.mark.parametrize("on_stderr", [False, True])
def test_driver_mismatch(on_stderr):
    facts = failing("driver_mismatch.txt", 18, pci=pci_of("a100_sxm4_40gb_x8"), on_stderr=on_stderr)
    assert facts["state"] == "driver_mismatch"
    assert "reboot" in facts["message"]
    assert "PCI shows 8 NVIDIA GPUs, none usable" in facts["problems"]
    assert facts["driver_version"] is None and facts["cuda_version"] is None


@pytest.mark.parametrize("name", ["driver_not_loaded.txt", "no_libnvidia_ml.txt"])
def test_driver_not_loaded(name):
    pci = pci_of("tesla_t4_x4", driver="nouveau")
    facts = failing(name, 9, pci=pci)
    assert facts["state"] == "driver_not_loaded"
    assert facts["pci_devices"][0]["driver"] == "nouveau"


def test_unknown_nvml_error_without_gpus_on_pci_is_an_error():
    facts = failing("nvml_unknown_error.txt", 255, pci=[])
    assert facts["state"] == "error"
    assert "Unknown Error" in facts["message"]


def test_unknown_nvml_error_on_a_gpu_host_is_missing_gpus():
    facts = failing("nvml_unknown_error.txt", 255, pci=pci_of("tesla_t4_x4"))
    assert facts["state"] == "missing_gpus"
    assert "Unknown Error" in facts["message"]


def test_a_gpu_that_fell_off_the_bus():
    query = (15, fixture("tesla_t4_x4_gpu_lost.csv"), "")
    facts = nvidia_gpu.gpu_facts(pci_of("tesla_t4_x4"), "/usr/bin/nvidia-smi", query, None)
    assert facts["state"] == "missing_gpus"
    assert facts["count"] == 3
    assert "0000:00:1e.0" in facts["message"] and "GPU is lost" in facts["message"]
    assert any("Unable to determine the device handle" in p for p in facts["problems"])


def test_a_lost_gpu_is_reported_even_without_sysfs():
    query = (15, fixture("tesla_t4_x4_gpu_lost.csv"), "")
    facts = nvidia_gpu.gpu_facts(None, "/usr/bin/nvidia-smi", query, None, pci_problem="no sysfs")
    assert facts["state"] == "missing_gpus" and facts["expected_count"] is None
    assert "no sysfs" in facts["problems"]


def test_pci_shows_more_gpus_than_nvidia_smi_lists():
    pci = pci_of("a100_sxm4_40gb_x8")
    seven = "".join(fixture("a100_sxm4_40gb_x8.csv").splitlines(True)[:7])
    facts = nvidia_gpu.gpu_facts(pci, "/usr/bin/nvidia-smi", (0, seven, ""), (0, fixture("a100_sxm4_40gb_x8.txt"), ""))
    assert facts["state"] == "missing_gpus"
    assert facts["count"] == 7 and facts["expected_count"] == 8
    assert "0000:a0:1d.0 (driver nvidia)" in facts["message"]
    assert [d["reported"] for d in facts["pci_devices"]] == [True] * 7 + [False]


def test_more_gpus_than_pci_shows_is_ok_with_a_note():
    facts = facts_for("tesla_t4_x4", pci=pci_of("tesla_t4_x4")[:2])
    assert facts["state"] == "ok"
    assert any("PCI shows only 2" in p for p in facts["problems"])


def test_unreadable_sysfs_leaves_the_decision_to_nvidia_smi():
    facts = facts_for("tesla_t4_x4", pci=None)
    assert facts["state"] == "ok" and facts["expected_count"] is None


def test_missing_cuda_version_is_a_problem_not_a_failure():
    facts = nvidia_gpu.gpu_facts(pci_of("tesla_t4_x4"), "/usr/bin/nvidia-smi",
                                 (0, fixture("tesla_t4_x4.csv"), ""), (1, "", "Segmentation fault"))
    assert facts["state"] == "ok" and facts["cuda_version"] is None
    assert any("CUDA version" in p for p in facts["problems"])


def test_every_state_is_one_of_the_documented_ones():
    assert set(nvidia_gpu.STATES) == {"ok", "no_binary", "no_device", "driver_mismatch",
                                      "driver_not_loaded", "missing_gpus", "error"}


# --- sysfs ---------------------------------------------------------------------------------


def make_sysfs(root, devices):
    """devices: [(address, vendor, class, device, driver or None)]"""
    base = root / "bus" / "pci" / "devices"
    base.mkdir(parents=True, exist_ok=True)
    for address, vendor, klass, device, driver in devices:
        path = base / address
        path.mkdir()
        (path / "vendor").write_text(vendor + "\n")
        (path / "class").write_text(klass + "\n")
        (path / "device").write_text(device + "\n")
        if driver:
            target = root / "bus" / "pci" / "drivers" / driver
            target.mkdir(parents=True, exist_ok=True)
            (path / "driver").symlink_to(target)
    return root


HGX = [
    ("0000:00:00.0", "0x8086", "0x060000", "0x09a2", None),          # Intel host bridge
    ("0000:10:1c.0", "0x10de", "0x030200", "0x20b0", "nvidia"),      # A100 (3D controller)
    ("0000:10:1d.0", "0x10de", "0x030200", "0x20b0", "nvidia"),
    ("0000:c0:00.0", "0x10de", "0x068000", "0x1af1", None),          # NVSwitch (bridge): not a GPU
    ("0000:01:00.0", "0x10de", "0x030000", "0x2204", "nouveau"),     # GeForce (VGA)
    ("0000:01:00.1", "0x10de", "0x040300", "0x1aef", "snd_hda_intel"),  # its HDMI audio: not a GPU
    ("0000:02:00.0", "0x1af4", "0x010000", "0x1001", "virtio-pci"),
]


def test_scan_pci_finds_only_nvidia_display_controllers(tmp_path):
    devices, problem = nvidia_gpu.scan_pci(str(make_sysfs(tmp_path, HGX)))
    assert problem is None
    assert [(d["address"], d["device_id"], d["driver"]) for d in devices] == [
        ("0000:01:00.0", "0x2204", "nouveau"),
        ("0000:10:1c.0", "0x20b0", "nvidia"),
        ("0000:10:1d.0", "0x20b0", "nvidia"),
    ]
    assert all(d["vendor_id"] == "0x10de" and d["class_code"].startswith("0x03") for d in devices)


def test_scan_pci_without_sysfs(tmp_path):
    devices, problem = nvidia_gpu.scan_pci(str(tmp_path / "nowhere"))
    assert devices is None and "cannot be read" in problem


def test_scan_pci_on_a_host_without_gpus(tmp_path):
    devices, problem = nvidia_gpu.scan_pci(str(make_sysfs(tmp_path, HGX[:1])))
    assert devices == [] and problem is None


# --- the module, end to end ----------------------------------------------------------------


def fake_nvidia_smi(directory, case=None, query_rc=0, error=None, smi_rc=0, sleep=None):
    """An nvidia-smi that answers the module's two calls (and only them) from a fixture."""
    directory.mkdir(parents=True, exist_ok=True)
    query_file = FIXTURES / (error or f"{case}.csv")
    smi_file = FIXTURES / (error or f"{case}.txt")
    script = directory / "nvidia-smi"
    script.write_text(f"""#!/bin/sh
{f'sleep {sleep}' if sleep else ''}
if [ $# -eq 2 ] && [ "$1" = "{QUERY[0]}" ] && [ "$2" = "{QUERY[1]}" ]; then
  cat '{query_file}'; exit {query_rc}
elif [ $# -eq 0 ]; then
  cat '{smi_file}'; exit {smi_rc}
fi
echo "fake nvidia-smi: unexpected arguments: $*" >&2
exit 99
""")
    script.chmod(0o755)
    return script


def sysfs_for(root, case, driver="nvidia"):
    gpus = nvidia_gpu.parse_query(fixture(f"{case}.csv"))[0]
    return make_sysfs(root, [(nvidia_gpu.normalize_pci_address(g["pci_bus_id"]), "0x10de", "0x030200", "0x1eb8", driver)
                             for g in gpus] + HGX[:1])


def run_module(args, capsys):
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exit_info:
            facts_module.main()
    result = json.loads(capsys.readouterr().out)
    return exit_info.value.code, result


@pytest.fixture
def on_path(tmp_path, monkeypatch):
    """A bin directory first on PATH (and nothing else that could hold an nvidia-smi)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    return bin_dir


def test_main_ok(tmp_path, on_path, capsys):
    fake_nvidia_smi(on_path, "tesla_t4_x4")
    rc, result = run_module({"sysfs_root": str(sysfs_for(tmp_path / "sys", "tesla_t4_x4"))}, capsys)
    assert rc == 0 and result["changed"] is False
    facts = result["ansible_facts"]["nvidia_gpu"]
    assert facts["state"] == "ok"
    assert facts["count"] == 4 and facts["expected_count"] == 4
    assert facts["driver_version"] == "470.82.01" and facts["cuda_version"] == "11.4"
    assert facts["nvidia_smi"] == str(on_path / "nvidia-smi")
    assert result["msg"] == facts["message"]


def test_main_no_binary(tmp_path, on_path, capsys):
    rc, result = run_module({"sysfs_root": str(sysfs_for(tmp_path / "sys", "tesla_t4_x4", driver=None))}, capsys)
    assert rc == 0
    facts = result["ansible_facts"]["nvidia_gpu"]
    assert facts["state"] == "no_binary" and facts["expected_count"] == 4 and facts["nvidia_smi"] is None


def test_main_nvidia_smi_path_that_does_not_exist(tmp_path, on_path, capsys):
    fake_nvidia_smi(on_path, "tesla_t4_x4")
    rc, result = run_module({"nvidia_smi_path": str(tmp_path / "nope"), "sysfs_root": str(tmp_path)}, capsys)
    facts = result["ansible_facts"]["nvidia_gpu"]
    assert facts["state"] == "no_binary" and str(tmp_path / "nope") in facts["message"]


def test_main_nvidia_smi_path_option(tmp_path, capsys):
    script = fake_nvidia_smi(tmp_path / "opt", "h100_80gb_hbm3_x1")
    rc, result = run_module({"nvidia_smi_path": str(script), "sysfs_root": str(tmp_path / "nosys")}, capsys)
    facts = result["ansible_facts"]["nvidia_gpu"]
    assert facts["state"] == "ok" and facts["cuda_version"] == "12.4" and facts["expected_count"] is None


@pytest.mark.parametrize("error, rc, loaded, state", [
    ("driver_mismatch.txt", 18, True, "driver_mismatch"),
    ("driver_not_loaded.txt", 9, False, "driver_not_loaded"),
    ("no_devices.txt", 6, True, "no_device"),
    ("nvml_unknown_error.txt", 255, True, "error"),
    # No /proc/driver/nvidia/version: the module is not loaded (as in a container).
    ("nvml_unknown_error.txt", 255, False, "driver_not_loaded"),
])
def test_main_error_states_never_fail(tmp_path, on_path, capsys, error, rc, loaded, state):
    fake_nvidia_smi(on_path, error=error, query_rc=rc, smi_rc=rc)
    proc = tmp_path / "proc"
    if loaded:
        (proc / "driver" / "nvidia").mkdir(parents=True)
        (proc / "driver" / "nvidia" / "version").write_text("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15\n")
    code, result = run_module({"sysfs_root": str(make_sysfs(tmp_path / "sys", HGX[:1])), "proc_root": str(proc)}, capsys)
    assert code == 0 and "failed" not in result
    assert result["ansible_facts"]["nvidia_gpu"]["state"] == state


def test_main_fail_on_missing_fails_a_gpu_worker_whose_gpu_vanished(tmp_path, on_path, capsys):
    fake_nvidia_smi(on_path, error="tesla_t4_x4_gpu_lost.csv", query_rc=15)
    sysfs = sysfs_for(tmp_path / "sys", "tesla_t4_x4")
    code, result = run_module({"sysfs_root": str(sysfs)}, capsys)
    assert code == 0 and result["ansible_facts"]["nvidia_gpu"]["state"] == "missing_gpus"

    code, result = run_module({"sysfs_root": str(sysfs), "fail_on_missing": True}, capsys)
    assert code == 1 and result["failed"] is True
    assert "missing_gpus" in result["msg"] and "0000:00:1e.0" in result["msg"]
    assert result["nvidia_gpu"]["count"] == 3


def test_main_fail_on_missing_passes_a_healthy_host_and_a_cpu_host(tmp_path, on_path, capsys):
    fake_nvidia_smi(on_path, "tesla_t4_x4")
    code = run_module({"sysfs_root": str(sysfs_for(tmp_path / "sys", "tesla_t4_x4")), "fail_on_missing": True}, capsys)[0]
    assert code == 0
    code, result = run_module({"sysfs_root": str(make_sysfs(tmp_path / "cpu", HGX[:1])), "fail_on_missing": True,
                               "nvidia_smi_path": str(tmp_path / "absent")}, capsys)
    assert code == 0 and result["ansible_facts"]["nvidia_gpu"]["state"] == "no_binary"


def test_main_fail_on_missing_without_a_driver(tmp_path, on_path, capsys):
    code, result = run_module({"sysfs_root": str(sysfs_for(tmp_path / "sys", "tesla_t4_x4", driver=None)),
                               "fail_on_missing": True}, capsys)
    assert code == 1 and "no_binary" in result["msg"]


def test_main_in_check_mode(tmp_path, on_path, capsys):
    fake_nvidia_smi(on_path, "a100_80gb_pcie_mig")
    code, result = run_module({"sysfs_root": str(sysfs_for(tmp_path / "sys", "a100_80gb_pcie_mig")),
                               "_ansible_check_mode": True}, capsys)
    assert code == 0 and result["changed"] is False
    assert result["ansible_facts"]["nvidia_gpu"]["gpus"][0]["mig_mode"] == "Enabled"


def test_main_hung_nvidia_smi_is_stopped(tmp_path, on_path, capsys):
    fake_nvidia_smi(on_path, "tesla_t4_x4", sleep=30)
    code, result = run_module({"sysfs_root": str(sysfs_for(tmp_path / "sys", "tesla_t4_x4")), "timeout": 1}, capsys)
    facts = result["ansible_facts"]["nvidia_gpu"]
    assert code == 0 and facts["state"] == "missing_gpus"
    assert "did not answer within 1 seconds" in facts["message"]


def test_module_file_runs_as_ansible_runs_it(tmp_path, on_path):
    """The module file as a program, importing its module_utils by FQCN from a collection tree."""
    tree = tmp_path / "collections" / "ansible_collections" / "sparkfleet"
    tree.mkdir(parents=True)
    (tree / "cluster").symlink_to(ROOT)
    fake_nvidia_smi(on_path, "a100_sxm4_40gb_x8")
    args = tmp_path / "args.json"
    args.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {
        "sysfs_root": str(sysfs_for(tmp_path / "sys", "a100_sxm4_40gb_x8"))}}))
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "collections"))
    proc = subprocess.run([sys.executable, str(ROOT / "plugins" / "modules" / "nvidia_gpu_facts.py"), str(args)],
                          capture_output=True, text=True, env=env, cwd=str(tmp_path), check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    facts = json.loads(proc.stdout)["ansible_facts"]["nvidia_gpu"]
    assert facts["state"] == "ok" and facts["count"] == 8 and facts["cuda_version"] == "12.2"


def test_nvml_unknown_error_without_the_kernel_module_is_driver_not_loaded():
    # In a container NVML may create /dev/nvidiactl itself and then fail with "Unknown Error":
    # with no /proc/driver/nvidia/version the module is simply not loaded.
    text = "Failed to initialize NVML: Unknown Error"
    assert nvidia_gpu.classify_failure(text, module_loaded=False)[0] == "driver_not_loaded"
    # With the module loaded (or unknown) it stays an unexplained error.
    assert nvidia_gpu.classify_failure(text, module_loaded=True)[0] == "error"
    assert nvidia_gpu.classify_failure(text)[0] == "error"
