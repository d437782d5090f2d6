# -*- coding: utf-8 -*-
# Copyright: sparkfleet contributors
# Apache License 2.0
"""Reading NVIDIA GPUs: nvidia-smi's output and the PCI devices in sysfs.

Pure functions (apart from :func:`scan_pci`, which reads sysfs) used by the
``sparkfleet.cluster.nvidia_gpu_facts`` module, kept here so that they are
unit-tested on recorded nvidia-smi output without a GPU.

The facts (:func:`gpu_facts`) have a ``state``:

``ok``
    nvidia-smi lists every GPU that PCI shows (or PCI could not be read).
``no_binary``
    nvidia-smi is not installed.
``driver_mismatch``
    "Failed to initialize NVML: Driver/library version mismatch": the loaded
    kernel module and the driver's libraries differ (a driver upgrade without
    a reboot).
``driver_not_loaded``
    nvidia-smi cannot talk to the kernel driver (module not loaded, not built
    for this kernel, nouveau bound), or the driver's libraries are missing.
``missing_gpus``
    PCI shows more NVIDIA GPUs than nvidia-smi lists, or nvidia-smi itself
    reports a GPU it cannot reach ("GPU is lost"), or it fails on a host whose
    PCI bus has NVIDIA GPUs.
``no_device``
    nvidia-smi works but finds no GPU ("No devices were found"), and PCI shows
    none either.
``error``
    anything else; ``message`` and ``problems`` hold what nvidia-smi said.

The first that applies wins, in this order: ``no_binary``, ``driver_mismatch``,
``driver_not_loaded``, ``missing_gpus``, ``no_device``, ``error``, ``ok``.
"""

from __future__ import annotations

import csv
import os
import re

QUERY_FIELDS = (
    "index",
    "uuid",
    "name",
    "memory.total",
    "driver_version",
    "mig.mode.current",
    "pci.bus_id",
)
QUERY_ARGS = ("--query-gpu=" + ",".join(QUERY_FIELDS), "--format=csv,noheader,nounits")

NVIDIA_VENDOR_ID = 0x10DE
DISPLAY_CLASS = 0x03  # PCI base class 0x03: VGA (0x0300), 3D (0x0302) and other display (0x0380) controllers

STATES = ("ok", "no_binary", "no_device", "driver_mismatch", "driver_not_loaded", "missing_gpus", "error")

_CUDA_VERSION = re.compile(r"CUDA Version\s*:?\s*(\d+\.\d+(?:\.\d+)?)")
_DRIVER_VERSION = re.compile(r"Driver Version\s*:?\s*(\d+\.\d+(?:\.\d+)?)")
_NVML_LIBRARY_VERSION = re.compile(r"NVML library version:\s*(\S+)")
_LOST_GPU = re.compile(
    r"Unable to determine the device handle for (?:GPU\s*)?"
    r"([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*:?\s*(.*)"
)
_PCI_ADDRESS = re.compile(r"^([0-9A-Fa-f]{1,8}):([0-9A-Fa-f]{1,2}):([0-9A-Fa-f]{1,2})\.([0-7])$")

_MISMATCH = "driver/library version mismatch"
_NO_DRIVER = "couldn't communicate with the nvidia driver"
_NO_LIBRARY = "couldn't find libnvidia-ml.so"
_NO_DEVICE = "no devices were found"
_NVML_UNKNOWN = "failed to initialize nvml: unknown error"


def query_command(nvidia_smi):
    """The argument vector of the nvidia-smi query the facts are read from."""
    return [nvidia_smi] + list(QUERY_ARGS)


def parse_value(raw):
    """One field of nvidia-smi's CSV: None for its placeholders ([N/A], [Not Supported], ...)."""
    value = (raw or "").strip()
    if not value or value == "N/A" or (value.startswith("[") and value.endswith("]")):
        return None
    return value


def _int_or_none(raw):
    value = parse_value(raw)
    if value is None:
        return None
    try:
        return int(float(value))
    except ValueError:
        return None


def normalize_pci_address(address):
    """``00000000:1E:00.0`` (nvidia-smi) and ``0000:00:1e.0`` (sysfs) in one form: ``0000:00:1e.0``."""
    match = _PCI_ADDRESS.match((address or "").strip())
    if not match:
        return None
    domain, bus, device, function = match.groups()
    return "%04x:%02x:%02x.%s" % (int(domain, 16), int(bus, 16), int(device, 16), function)


def parse_query(text):
    """Parse ``nvidia-smi --query-gpu=<QUERY_FIELDS> --format=csv,noheader,nounits``.

    Returns ``(gpus, other_lines)``: one dict per well-formed row, in nvidia-smi's
    order, and every other non-empty line (error messages nvidia-smi mixes in).
    """
    gpus, other = [], []
    for line in (text or "").splitlines():
        if not line.strip():
            continue
        row = next(csv.reader([line], skipinitialspace=True))
        index = _int_or_none(row[0]) if len(row) == len(QUERY_FIELDS) else None
        uuid = parse_value(row[1]) if len(row) == len(QUERY_FIELDS) else None
        if index is None or uuid is None:
            other.append(line.strip())
            continue
        gpus.append({
            "index": index,
            "uuid": uuid,
            "name": parse_value(row[2]),
            "memory_mb": _int_or_none(row[3]),
            "driver_version": parse_value(row[4]),
            "mig_mode": parse_value(row[5]),
            "pci_bus_id": parse_value(row[6]),
        })
    return gpus, other


def parse_cuda_version(text):
    """The CUDA version the driver supports, from ``nvidia-smi`` or ``nvidia-smi -q`` (None if absent or N/A)."""
    match = _CUDA_VERSION.search(text or "")
    return match.group(1) if match else None


def parse_driver_version(text):
    """The driver version from ``nvidia-smi`` or ``nvidia-smi -q`` output (None if absent)."""
    match = _DRIVER_VERSION.search(text or "")
    return match.group(1) if match else None


def lost_gpus(lines):
    """``[(pci_address, reason)]`` for nvidia-smi's "Unable to determine the device handle" lines."""
    found = []
    for line in lines:
        match = _LOST_GPU.search(line)
        if match:
            found.append((normalize_pci_address(match.group(1)), match.group(2).strip() or "unknown error"))
    return found


def _first_lines(text, count=3):
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return " / ".join(lines[:count]) or "no output"


def classify_failure(text, module_loaded=None):
    """``(state, message)`` for what nvidia-smi printed when it did not list GPUs.

    ``module_loaded`` (whether /proc/driver/nvidia/version exists; None = unknown) tells
    NVML's generic "Unknown Error" apart when the kernel module is simply not there (as in a
    container, where NVML may create /dev/nvidiactl itself and then fail that way)."""
    lowered = (text or "").lower()
    if _MISMATCH in lowered:
        library = _NVML_LIBRARY_VERSION.search(text)
        detail = " (NVML library %s)" % library.group(1) if library else ""
        return "driver_mismatch", (
            "NVML cannot initialize: Driver/library version mismatch%s. The loaded nvidia kernel module "
            "and the installed driver libraries differ, typically after a driver upgrade without a reboot: "
            "reboot the host (or unload and reload the nvidia kernel modules)." % detail
        )
    if _NO_DRIVER in lowered:
        return "driver_not_loaded", (
            "nvidia-smi cannot communicate with the NVIDIA kernel driver: the nvidia module is not loaded "
            "(not built for the running kernel, blocked by nouveau, or not installed). Install the driver "
            "for this kernel and reboot."
        )
    if _NO_LIBRARY in lowered:
        return "driver_not_loaded", (
            "nvidia-smi cannot find libnvidia-ml.so: the NVIDIA driver's libraries are not installed "
            "(nvidia-smi without a driver). Install the NVIDIA driver."
        )
    if _NO_DEVICE in lowered:
        return "no_device", "nvidia-smi found no NVIDIA GPU (No devices were found)."
    if _NVML_UNKNOWN in lowered and module_loaded is False:
        return "driver_not_loaded", (
            "NVML cannot initialize (Unknown Error) and /proc/driver/nvidia/version is absent: the nvidia "
            "kernel module is not loaded (inside a container it cannot be). Install the driver for this kernel "
            "and reboot, on the host itself."
        )
    return "error", "nvidia-smi failed: %s" % _first_lines(text)


def _read_sysfs(path):
    try:
        with open(path, "r") as handle:
            return handle.read().strip()
    except (IOError, OSError):
        return None


def scan_pci(sysfs_root="/sys"):
    """NVIDIA display and 3D controllers on the PCI bus, read from sysfs.

    Returns ``(devices, problem)``: ``devices`` is a list (sorted by address)
    of ``{address, vendor_id, device_id, class_code, driver}``, or None when
    the PCI devices cannot be read, and then ``problem`` says why.
    NVSwitches (bridges) and the HDMI audio functions of GeForce cards are not
    GPUs and are left out.
    """
    base = os.path.join(sysfs_root, "bus", "pci", "devices")
    try:
        names = sorted(os.listdir(base))
    except (IOError, OSError) as exc:
        return None, "PCI devices cannot be read from %s: %s" % (base, exc.strerror or exc)
    devices = []
    for name in names:
        path = os.path.join(base, name)
        vendor = _read_sysfs(os.path.join(path, "vendor"))
        klass = _read_sysfs(os.path.join(path, "class"))
        try:
            if int(vendor, 16) != NVIDIA_VENDOR_ID or (int(klass, 16) >> 16) != DISPLAY_CLASS:
                continue
        except (TypeError, ValueError):
            continue
        driver = os.path.join(path, "driver")
        devices.append({
            "address": normalize_pci_address(name) or name,
            "vendor_id": vendor.lower(),
            "device_id": (_read_sysfs(os.path.join(path, "device")) or "").lower() or None,
            "class_code": klass.lower(),
            "driver": os.path.basename(os.path.realpath(driver)) if os.path.lexists(driver) else None,
        })
    return devices, None


def _plural(count, word):
    return "%d %s%s" % (count, word, "" if count == 1 else "s")


def gpu_facts(pci_devices, nvidia_smi=None, query=None, header=None, pci_problem=None, module_loaded=None):
    """Build the ``nvidia_gpu`` facts.

    ``pci_devices``: :func:`scan_pci`'s list, or None when PCI could not be read
    (``pci_problem`` then says why). ``nvidia_smi``: the path of nvidia-smi, or
    None when it is not installed. ``query``: ``(rc, stdout, stderr)`` of
    :func:`query_command`. ``header``: ``(rc, stdout, stderr)`` of a plain
    ``nvidia-smi`` (or ``nvidia-smi -q``) run, for the CUDA version; None when
    it was not run.
    """
    problems = []
    if pci_problem:
        problems.append(pci_problem)
    expected = None if pci_devices is None else len(pci_devices)
    pci = [dict(device) for device in (pci_devices or [])]
    facts = {
        "state": None,
        "message": None,
        "count": 0,
        "gpus": [],
        "driver_version": None,
        "cuda_version": None,
        "pci_devices": pci,
        "expected_count": expected,
        "problems": problems,
        "nvidia_smi": nvidia_smi,
    }

    if nvidia_smi is None:
        facts["state"] = "no_binary"
        message = "nvidia-smi is not installed (the NVIDIA driver is not installed)."
        if expected:
            message += " PCI shows %s: install the NVIDIA driver." % _plural(expected, "NVIDIA GPU")
            problems.append("PCI shows %s but nvidia-smi is not installed" % _plural(expected, "NVIDIA GPU"))
        facts["message"] = message
        _mark_reported(pci, [])
        return facts

    rc, out, err = query if query is not None else (None, "", "")
    gpus, other = parse_query(out)
    err_lines = [line.strip() for line in (err or "").splitlines() if line.strip()]
    other += err_lines
    problems.extend(other)
    lost = lost_gpus(other)
    all_text = "\n".join([out or "", err or ""])

    facts["gpus"] = [{k: v for k, v in gpu.items() if k != "driver_version"} for gpu in gpus]
    facts["count"] = count = len(gpus)
    drivers = [gpu["driver_version"] for gpu in gpus if gpu["driver_version"]]
    facts["driver_version"] = drivers[0] if drivers else None
    _mark_reported(pci, gpus)

    failure = None
    if rc != 0 or not gpus:
        failure = classify_failure(all_text, module_loaded)
        if not gpus and rc == 0 and failure[0] == "error" and not other:
            failure = ("no_device", "nvidia-smi listed no NVIDIA GPU.")

    if failure and failure[0] in ("driver_mismatch", "driver_not_loaded"):
        facts["state"], facts["message"] = failure
        if expected:
            problems.append("PCI shows %s, none usable" % _plural(expected, "NVIDIA GPU"))
    elif (expected is not None and count < expected) or lost:
        facts["state"] = "missing_gpus"
        facts["message"] = _missing_message(count, expected, pci, lost, failure)
    elif failure and count == 0:
        facts["state"], facts["message"] = failure
    elif rc != 0:
        facts["state"] = "error"
        facts["message"] = "nvidia-smi exited with %s after listing %s: %s" % (
            rc, _plural(count, "GPU"), _first_lines("\n".join(other)))
    else:
        facts["state"] = "ok"
        facts["message"] = _ok_message(gpus, facts["driver_version"])
        if expected is not None and count > expected:
            problems.append("nvidia-smi lists %s but PCI shows only %d (is sysfs_root the host's /sys?)"
                            % (_plural(count, "GPU"), expected))

    if gpus and header is not None:
        header_rc, header_out, header_err = header
        text = "\n".join([header_out or "", header_err or ""])
        facts["cuda_version"] = parse_cuda_version(text)
        if facts["driver_version"] is None:
            facts["driver_version"] = parse_driver_version(text)
        if facts["cuda_version"] is None:
            problems.append("the CUDA version was not found in nvidia-smi's output (rc %s): %s"
                            % (header_rc, _first_lines(text, 2)))
    if facts["state"] == "ok" and facts["cuda_version"]:
        facts["message"] = facts["message"][:-1] + ", CUDA %s." % facts["cuda_version"]
    return facts


def _mark_reported(pci, gpus):
    reported = set(normalize_pci_address(gpu["pci_bus_id"]) for gpu in gpus)
    for device in pci:
        device["reported"] = device["address"] in reported


def _ok_message(gpus, driver_version):
    names = []
    for gpu in gpus:
        name = gpu["name"] or "unnamed GPU"
        if name not in names:
            names.append(name)
    summary = ", ".join("%dx %s" % (sum(1 for gpu in gpus if (gpu["name"] or "unnamed GPU") == name), name)
                        for name in names)
    return "%s: %s, driver %s." % (_plural(len(gpus), "NVIDIA GPU"), summary, driver_version or "unknown")


def _missing_message(count, expected, pci, lost, failure):
    parts = []
    if expected is not None and count < expected:
        parts.append("PCI shows %s but nvidia-smi lists %d" % (_plural(expected, "NVIDIA GPU"), count))
        absent = ["%s (driver %s)" % (device["address"], device["driver"] or "none")
                  for device in pci if not device.get("reported")]
        if absent and count:
            parts.append("not listed: %s" % ", ".join(absent))
    for address, reason in lost:
        parts.append("nvidia-smi cannot reach the GPU at %s: %s" % (address or "an unknown address", reason))
    if failure and count == 0:
        parts.append(failure[1].rstrip("."))
    return "; ".join(parts) + ". A GPU fell off the bus, is bound to another driver, or failed; check dmesg (Xid errors)."
