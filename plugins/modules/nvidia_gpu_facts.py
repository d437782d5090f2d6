#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: sparkfleet contributors
# Apache License 2.0

from __future__ import annotations

DOCUMENTATION = r"""
module: nvidia_gpu_facts
short_description: Facts about a host's NVIDIA GPUs, from nvidia-smi and the PCI bus
version_added: 0.1.0
description:
  - Run C(nvidia-smi --query-gpu=index,uuid,name,memory.total,driver_version,mig.mode.current,pci.bus_id
    --format=csv,noheader,nounits) and return the host's NVIDIA GPUs as the fact C(ansible_facts.nvidia_gpu),
    with the driver version and the CUDA version the driver supports (read from the header of a plain
    C(nvidia-smi) run).
  - Independently of any driver, read the PCI devices from sysfs (vendor C(0x10de), class C(0x03xxxx),
    that is VGA, 3D and other display controllers; NVSwitches and the audio functions of GeForce cards are
    left out), so the facts say how many GPUs the host B(should) have even before a driver is installed,
    and a GPU worker whose GPUs vanished is reported (state V(missing_gpus)).
  - Every outcome is a state with a message, never a traceback; see RV(ansible_facts.nvidia_gpu.state).
  - The module only reads. It does not fail unless O(fail_on_missing=true).
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.facts
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  facts:
    support: full
  platform:
    platforms: posix
options:
  nvidia_smi_path:
    description:
      - Path of the C(nvidia-smi) binary.
      - By default it is searched on E(PATH) (and the C(sbin) directories). When it is not found, or the
        given path is not an executable file, the state is V(no_binary).
    type: path
  sysfs_root:
    description:
      - Where sysfs is mounted; PCI devices are read from C(<sysfs_root>/bus/pci/devices/*/{vendor,class,device,driver}).
      - Tests point it at a fake tree. When it cannot be read, RV(ansible_facts.nvidia_gpu.expected_count) is
        V(null), a problem says why, and the state is decided from nvidia-smi alone.
    type: path
    default: /sys
  proc_root:
    description:
      - Where procfs is mounted. C(<proc_root>/driver/nvidia/version) exists while the nvidia kernel module is
        loaded; without it, NVML's generic "Unknown Error" is reported as V(driver_not_loaded).
    type: path
    default: /proc
  fail_on_missing:
    description:
      - Fail the task when PCI shows NVIDIA GPUs that are not usable, that is when nvidia-smi lists fewer
        GPUs than PCI shows, whatever the reason (no driver, driver not loaded, version mismatch, a lost GPU).
      - With V(false) the facts are set and the task succeeds whatever the state; check
        RV(ansible_facts.nvidia_gpu.state) yourself.
    type: bool
    default: false
  timeout:
    description:
      - Seconds each nvidia-smi run may take before it is stopped (a GPU or driver in a bad state can make
        nvidia-smi hang). The state is then V(error), or V(missing_gpus) when PCI shows GPUs.
      - Needs the C(timeout) command (coreutils); without it, or with V(0), nvidia-smi is not limited.
    type: int
    default: 60
notes:
  - 'The state is the first of these that applies: V(no_binary) (nvidia-smi not installed),
    V(driver_mismatch) (C(Failed to initialize NVML: Driver/library version mismatch)), V(driver_not_loaded)
    (C(NVIDIA-SMI has failed because it couldn''t communicate with the NVIDIA driver), or C(libnvidia-ml.so)
    not found), V(missing_gpus) (PCI shows more NVIDIA GPUs than nvidia-smi lists, nvidia-smi reports a GPU
    it cannot reach, or it fails on a host whose PCI bus has NVIDIA GPUs), V(no_device) (C(No devices were found)
    and PCI shows none), V(error) (any other failure), V(ok).'
  - With MIG enabled (RV(ansible_facts.nvidia_gpu.gpus[].mig_mode) is V(Enabled)) a container needs the
    MIG devices' UUIDs, not the GPU's; this module lists physical GPUs only.
seealso:
  - plugin: sparkfleet.cluster.gpu_shares
    plugin_type: filter
author:
  - sparkfleet maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Read the GPUs
  sparkfleet.cluster.nvidia_gpu_facts:

- name: Show them
  ansible.builtin.debug:
    msg: "{{ ansible_facts.nvidia_gpu.message }}"

- name: A GPU worker must have all of its GPUs usable
  sparkfleet.cluster.nvidia_gpu_facts:
    fail_on_missing: true
  when: inventory_hostname in groups['gpu_workers']

- name: Hosts whose PCI bus has NVIDIA GPUs but no working driver yet
  ansible.builtin.debug:
    msg: "{{ inventory_hostname }} needs the NVIDIA driver: {{ ansible_facts.nvidia_gpu.message }}"
  when:
    - ansible_facts.nvidia_gpu.expected_count | default(0, true) > 0
    - ansible_facts.nvidia_gpu.state in ['no_binary', 'driver_not_loaded']

- name: Reboot after a driver upgrade left the old kernel module loaded
  ansible.builtin.reboot:
  when: ansible_facts.nvidia_gpu.state == 'driver_mismatch'

- name: Swarm generic resources, each GPU shared three ways
  ansible.builtin.set_fact:
    gpu_node_generic_resources: >-
      {{ ansible_facts.nvidia_gpu.gpus
         | sparkfleet.cluster.gpu_shares(3)
         | sparkfleet.cluster.gpu_generic_resources }}
"""

RETURN = r"""
ansible_facts:
  description: Facts to add to C(ansible_facts).
  returned: always
  type: dict
  contains:
    nvidia_gpu:
      description: The host's NVIDIA GPUs.
      returned: always
      type: dict
      contains:
        state:
          description: What was found; see the notes for the order in which states are decided.
          type: str
          returned: always
          choices: [ok, no_binary, no_device, driver_mismatch, driver_not_loaded, missing_gpus, error]
          sample: ok
        message:
          description: One sentence for a human, saying what was found and, when something is wrong, what to do.
          type: str
          returned: always
          sample: "4 NVIDIA GPUs: 4x Tesla T4, driver 470.82.01, CUDA 11.4."
        count:
          description: How many GPUs nvidia-smi lists (V(0) when it is missing or fails).
          type: int
          returned: always
          sample: 4
        gpus:
          description: The GPUs nvidia-smi lists, in its order. Fields nvidia-smi shows as C([N/A]) or C([Not Supported]) are V(null).
          type: list
          elements: dict
          returned: always
          contains:
            index:
              description: nvidia-smi's index of the GPU (the CUDA device number unless C(CUDA_VISIBLE_DEVICES) or C(CUDA_DEVICE_ORDER) change it).
              type: int
              sample: 0
            uuid:
              description: The GPU's UUID, as C(NVIDIA_VISIBLE_DEVICES) and Swarm generic resources name it.
              type: str
              sample: GPU-8f6b2a5e-1c3d-4e5f-9a0b-1c2d3e4f5a6b
            name:
              description: Product name.
              type: str
              sample: Tesla T4
            memory_mb:
              description: Total memory in MiB as nvidia-smi reports it (slightly below the nominal size, for example V(15109) for a 16 GB T4).
              type: int
              sample: 15109
            pci_bus_id:
              description: PCI bus id as nvidia-smi prints it.
              type: str
              sample: "00000000:00:1E.0"
            mig_mode:
              description: V(Enabled) or V(Disabled) on MIG-capable GPUs, V(null) on the others.
              type: str
              sample: Disabled
        driver_version:
          description: The NVIDIA driver version, V(null) when nvidia-smi does not work.
          type: str
          returned: always
          sample: 535.104.05
        cuda_version:
          description: The highest CUDA version the driver supports, V(null) when unknown.
          type: str
          returned: always
          sample: "12.2"
        pci_devices:
          description: The NVIDIA display and 3D controllers sysfs shows, sorted by address.
          type: list
          elements: dict
          returned: always
          contains:
            address:
              description: PCI address, C(<domain>:<bus>:<device>.<function>), lowercase.
              type: str
              sample: "0000:00:1e.0"
            vendor_id:
              description: PCI vendor id, always V(0x10de).
              type: str
              sample: "0x10de"
            device_id:
              description: PCI device id (the GPU model).
              type: str
              sample: "0x1eb8"
            class_code:
              description: PCI class code (V(0x030000) VGA, V(0x030200) 3D controller).
              type: str
              sample: "0x030200"
            driver:
              description: The kernel driver bound to the device (V(nvidia), V(nouveau), V(vfio-pci)), V(null) when none is.
              type: str
              sample: nvidia
            reported:
              description: Whether nvidia-smi lists the GPU at this address.
              type: bool
              sample: true
        expected_count:
          description: How many NVIDIA GPUs PCI shows, V(null) when sysfs could not be read.
          type: int
          returned: always
          sample: 4
        problems:
          description: Everything that looked wrong, one line each (nvidia-smi's own error lines included).
          type: list
          elements: str
          returned: always
          sample: ["Unable to determine the device handle for GPU 0000:00:1E.0: GPU is lost.  Reboot the system to recover this GPU"]
        nvidia_smi:
          description: Path of the nvidia-smi that was run, V(null) when none was found.
          type: str
          returned: always
          sample: /usr/bin/nvidia-smi
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sparkfleet.cluster.plugins.module_utils.nvidia_gpu import (
    gpu_facts,
    query_command,
    scan_pci,
)


def _run(module, argv, timeout_bin):
    timeout = module.params["timeout"]
    if timeout_bin and timeout > 0:
        argv = [timeout_bin, "-k", "5", str(timeout)] + argv
    try:
        rc, out, err = module.run_command(argv, environ_update={"LC_ALL": "C"}, handle_exceptions=False)
    except (IOError, OSError) as exc:
        return 126, "", "cannot run %s: %s" % (argv[0], exc)
    if timeout_bin and timeout > 0 and rc in (124, 137):
        err = (err or "") + "\nnvidia-smi did not answer within %d seconds (a GPU or the driver may hang)" % timeout
    return rc, out, err


def _find_nvidia_smi(module):
    path = module.params["nvidia_smi_path"]
    if path:
        return path if os.path.isfile(path) and os.access(path, os.X_OK) else None
    return module.get_bin_path("nvidia-smi")


def main():
    module = AnsibleModule(
        argument_spec=dict(
            nvidia_smi_path=dict(type="path"),
            sysfs_root=dict(type="path", default="/sys"),
            proc_root=dict(type="path", default="/proc"),
            fail_on_missing=dict(type="bool", default=False),
            timeout=dict(type="int", default=60),
        ),
        supports_check_mode=True,
    )

    pci_devices, pci_problem = scan_pci(module.params["sysfs_root"])
    nvidia_smi = _find_nvidia_smi(module)
    query = header = None
    if nvidia_smi:
        timeout_bin = module.get_bin_path("timeout")
        query = _run(module, query_command(nvidia_smi), timeout_bin)
        if query[0] == 0:
            header = _run(module, [nvidia_smi], timeout_bin)
    module_loaded = os.path.exists(os.path.join(module.params["proc_root"], "driver", "nvidia", "version"))
    facts = gpu_facts(pci_devices, nvidia_smi, query, header, pci_problem, module_loaded)
    if nvidia_smi is None and module.params["nvidia_smi_path"]:
        facts["message"] = "nvidia-smi not found at %s (not an executable file). %s" % (
            module.params["nvidia_smi_path"], facts["message"])

    if module.params["fail_on_missing"] and facts["expected_count"] and facts["count"] < facts["expected_count"]:
        module.fail_json(msg="%s (state %s)" % (facts["message"], facts["state"]), nvidia_gpu=facts)
    module.exit_json(changed=False, msg=facts["message"], ansible_facts={"nvidia_gpu": facts})


if __name__ == "__main__":
    main()
