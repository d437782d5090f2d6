# -*- coding: utf-8 -*-
# Copyright: sparkfleet contributors
# Apache License 2.0
"""GPU filters: schedulable GPU shares for Docker Swarm, and Spark's GPU discovery.

``gpu_shares(gpus, shares=None, memory_per_share_mb=None)``
    Each physical GPU advertised as N shares named ``<uuid>``, ``<uuid>-2``, ...
    ``<uuid>-N`` (a 12 GB GPU shared three ways, so that three notebooks can use
    it: GPU-ABCD, GPU-ABCD-2, GPU-ABCD-3). N is given (``shares``), or derived from each GPU's
    memory and a per-notebook budget (``memory_per_share_mb``).

``gpu_generic_resources(share_ids, kind='NVIDIA-GPU')``
    The ``node-generic-resources`` entries of dockerd's daemon.json, ``<kind>=<id>``.

``gpu_swarm_resource_env(kind)``
    ``DOCKER_RESOURCE_<KIND>``: the environment variable through which Swarm hands a
    task the resources of that kind it was given, and so the ``swarm-resource``
    value of /etc/nvidia-container-runtime/config.toml. Both must name the same
    kind, or containers silently get no GPU.

``spark_gpu_discovery(addresses)``
    The JSON a Spark GPU discovery script prints: ``{"name": "gpu", "addresses": ["0", "1"]}``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

DEFAULT_KIND = "NVIDIA-GPU"
SWARM_ENV_PREFIX = "DOCKER_RESOURCE"
# A kind becomes part of an environment variable name and of 'kind=value' terms that
# swarmkit splits on '=' and ','; keep it to plain characters.
_KIND = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*$")
_SHARE_ID = re.compile(r"^[^\s,=]+$")


def _positive_int(value, name):
    if isinstance(value, bool):
        raise AnsibleFilterError(f"{name} must be an integer, got {value!r}")
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise AnsibleFilterError(f"{name} must be an integer, got {value!r}")
    if number != value and not (isinstance(value, str) and value.strip().isdigit()):
        raise AnsibleFilterError(f"{name} must be an integer, got {value!r}")
    if number < 1:
        raise AnsibleFilterError(f"{name} must be at least 1, got {value!r}")
    return number


def _check_kind(kind):
    if not isinstance(kind, str) or not _KIND.match(kind):
        raise AnsibleFilterError(
            f"invalid generic resource kind {kind!r}: use letters, digits, '-', '_' and '.', starting with a letter"
        )
    return kind


def _gpu_list(gpus):
    if isinstance(gpus, Mapping):
        hint = " (pass ansible_facts.nvidia_gpu.gpus, not the whole fact)" if "gpus" in gpus else ""
        raise AnsibleFilterError(f"gpu_shares expects a list of GPUs{hint}")
    if isinstance(gpus, (str, bytes)) or gpus is None:
        raise AnsibleFilterError(f"gpu_shares expects a list of GPUs, got {gpus!r}")
    try:
        return list(gpus)
    except TypeError:
        raise AnsibleFilterError(f"gpu_shares expects a list of GPUs, got {gpus!r}")


def gpu_shares(gpus, shares=None, memory_per_share_mb=None):
    if (shares is None) == (memory_per_share_mb is None):
        raise AnsibleFilterError(
            "gpu_shares needs exactly one of shares (shares per GPU) and memory_per_share_mb "
            f"(memory budget of one share), got shares={shares!r}, memory_per_share_mb={memory_per_share_mb!r}"
        )
    if shares is not None:
        shares = _positive_int(shares, "shares")
    else:
        memory_per_share_mb = _positive_int(memory_per_share_mb, "memory_per_share_mb")

    result, seen = [], set()
    for position, gpu in enumerate(_gpu_list(gpus)):
        if not isinstance(gpu, Mapping):
            raise AnsibleFilterError(f"GPU #{position} must be a dict with a uuid, got {gpu!r}")
        uuid = gpu.get("uuid")
        if not isinstance(uuid, str) or not _SHARE_ID.match(uuid):
            raise AnsibleFilterError(f"GPU #{position} has no usable uuid (no spaces, ',' or '='): {uuid!r}")
        if uuid in seen:
            raise AnsibleFilterError(f"GPU {uuid} is listed twice")
        seen.add(uuid)
        count = shares
        if count is None:
            memory_mb = gpu.get("memory_mb")
            if memory_mb is None:
                raise AnsibleFilterError(
                    f"GPU {uuid} has no memory_mb (nvidia-smi reported none): set shares instead of memory_per_share_mb"
                )
            memory_mb = _positive_int(memory_mb, f"memory_mb of GPU {uuid}")
            if memory_per_share_mb > memory_mb:
                raise AnsibleFilterError(
                    f"memory_per_share_mb {memory_per_share_mb} is more than GPU {uuid} has ({memory_mb} MiB)"
                )
            count = memory_mb // memory_per_share_mb
        result.append(uuid)
        result.extend(f"{uuid}-{n}" for n in range(2, count + 1))
    return result


def gpu_generic_resources(share_ids, kind=DEFAULT_KIND):
    _check_kind(kind)
    if isinstance(share_ids, (str, bytes, Mapping)) or share_ids is None:
        raise AnsibleFilterError(f"gpu_generic_resources expects a list of share ids, got {share_ids!r}")
    result, seen = [], set()
    for share in share_ids:
        if not isinstance(share, str) or not _SHARE_ID.match(share):
            raise AnsibleFilterError(f"invalid share id {share!r}: a non-empty string without spaces, ',' or '='")
        if share.isdigit():
            # swarmkit reads '<kind>=<integer>' as a count of interchangeable resources, not a named one.
            raise AnsibleFilterError(
                f"share id {share!r} is a number, which Swarm reads as a count: name GPUs by UUID"
            )
        if share in seen:
            raise AnsibleFilterError(f"share id {share} is listed twice")
        seen.add(share)
        result.append(f"{kind}={share}")
    return result


def gpu_swarm_resource_env(kind):
    _check_kind(kind)
    # swarmkit (api/genericresource.EnvFormat): strings.ToUpper(prefix + "_" + kind).
    return f"{SWARM_ENV_PREFIX}_{kind}".upper()


def spark_gpu_discovery(addresses):
    if isinstance(addresses, (str, bytes, Mapping)) or addresses is None:
        raise AnsibleFilterError(f"spark_gpu_discovery expects a list of GPU addresses, got {addresses!r}")
    result = []
    for address in addresses:
        if isinstance(address, bool) or not isinstance(address, (int, str)):
            raise AnsibleFilterError(f"invalid GPU address {address!r}: an index such as 0 or '0'")
        text = str(address).strip()
        if not text or any(c.isspace() for c in text):
            raise AnsibleFilterError(f"invalid GPU address {address!r}")
        if text in result:
            raise AnsibleFilterError(f"GPU address {text} is listed twice")
        result.append(text)
    if not result:
        raise AnsibleFilterError(
            "spark_gpu_discovery got no GPU address: a worker without GPUs must not claim spark.worker.resource.gpu"
        )
    return json.dumps({"name": "gpu", "addresses": result})


class FilterModule:
    """GPU share and discovery filters."""

    def filters(self):
        return {
            "gpu_shares": gpu_shares,
            "gpu_generic_resources": gpu_generic_resources,
            "gpu_swarm_resource_env": gpu_swarm_resource_env,
            "spark_gpu_discovery": spark_gpu_discovery,
        }
