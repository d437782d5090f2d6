"""GPU shares for Swarm, their generic resources, the runtime's swarm-resource, and Spark's discovery JSON."""

import json
import re
import tomllib

import pytest
from ansible.errors import AnsibleFilterError

from conftest import load_plugin

shares = load_plugin("filter", "gpu_shares")

ABCD = "GPU-ABCD"
K80 = {"uuid": "GPU-1b5a1d3e-6b1c-4c2e-9f0a-0d7c6e5b4a39", "memory_mb": 11441}   # a 12 GB K80 die
T4 = {"uuid": "GPU-400a99e4-afb3-79e6-a8b0-6bb90baef941", "memory_mb": 15109}
A100 = {"uuid": "GPU-695a552f-2cbe-59b5-7dce-9b0ed0228c89", "memory_mb": 40960}


# --- gpu_shares ----------------------------------------------------------------------------


def test_the_seed_scheme_three_shares_per_gpu():
    assert shares.gpu_shares([{"uuid": ABCD}], 3) == ["GPU-ABCD", "GPU-ABCD-2", "GPU-ABCD-3"]


def test_one_share_is_the_bare_uuid():
    assert shares.gpu_shares([T4, A100], 1) == [T4["uuid"], A100["uuid"]]


def test_shares_of_several_gpus_keep_their_order():
    result = shares.gpu_shares([T4, A100], 2)
    assert result == [T4["uuid"], T4["uuid"] + "-2", A100["uuid"], A100["uuid"] + "-2"]


def test_shares_derived_from_memory_per_gpu():
    result = shares.gpu_shares([T4, A100], memory_per_share_mb=4096)
    assert result.count(T4["uuid"]) == 1
    assert [s for s in result if s.startswith(T4["uuid"])][-1] == T4["uuid"] + "-3"    # 15109 // 4096
    assert [s for s in result if s.startswith(A100["uuid"])][-1] == A100["uuid"] + "-10"  # 40960 // 4096
    assert len(result) == 13


def test_a_12_gb_gpu_reports_less_than_12_gib():
    # A 12 GB GPU shared three ways is "4 GB" each, yet a 4096 MiB budget gives two.
    assert len(shares.gpu_shares([K80], memory_per_share_mb=4096)) == 2
    assert len(shares.gpu_shares([K80], memory_per_share_mb=3813)) == 3
    assert len(shares.gpu_shares([K80], 3)) == 3


def test_a_budget_equal_to_the_gpu_gives_one_share():
    assert shares.gpu_shares([T4], memory_per_share_mb=15109) == [T4["uuid"]]


def test_the_facts_modules_gpus_are_accepted_as_they_are():
    gpus = [{"index": 0, "uuid": T4["uuid"], "name": "Tesla T4", "memory_mb": 15109,
             "pci_bus_id": "00000000:00:1B.0", "mig_mode": None}]
    assert shares.gpu_shares(gpus, memory_per_share_mb=5000) == [T4["uuid"], T4["uuid"] + "-2", T4["uuid"] + "-3"]


def test_string_numbers_from_an_inventory_are_accepted():
    assert len(shares.gpu_shares([T4], "3")) == 3
    assert len(shares.gpu_shares([{"uuid": "GPU-X", "memory_mb": "8192"}], memory_per_share_mb="4096")) == 2


def test_no_gpu_no_share():
    assert shares.gpu_shares([], 3) == []


@pytest.mark.parametrize("kwargs, words", [
    ({}, "exactly one of shares"),
    ({"shares": 2, "memory_per_share_mb": 4096}, "exactly one of shares"),
    ({"shares": 0}, "shares must be at least 1"),
    ({"shares": -1}, "shares must be at least 1"),
    ({"shares": 1.5}, "shares must be an integer"),
    ({"shares": True}, "shares must be an integer"),
    ({"shares": "three"}, "shares must be an integer"),
    ({"memory_per_share_mb": 0}, "memory_per_share_mb must be at least 1"),
    ({"memory_per_share_mb": 16000}, "memory_per_share_mb 16000 is more than GPU " + T4["uuid"] + " has (15109 MiB)"),
])
def test_nonsense_is_refused_naming_the_problem(kwargs, words):
    with pytest.raises(AnsibleFilterError) as error:
        shares.gpu_shares([T4], **kwargs)
    assert words in str(error.value)


@pytest.mark.parametrize("gpus, words", [
    ([{"memory_mb": 1024}], "no usable uuid"),
    ([{"uuid": ""}], "no usable uuid"),
    ([{"uuid": "GPU-A,GPU-B"}], "no usable uuid"),
    ([{"uuid": "GPU A"}], "no usable uuid"),
    ([T4, T4], "listed twice"),
    (["GPU-ABCD"], "must be a dict"),
    ({"gpus": [T4], "count": 1}, "pass ansible_facts.nvidia_gpu.gpus"),
    ("GPU-ABCD", "expects a list"),
])
def test_bad_gpu_lists_are_refused(gpus, words):
    with pytest.raises(AnsibleFilterError, match=re.escape(words)):
        shares.gpu_shares(gpus, 2)


def test_deriving_needs_the_memory():
    with pytest.raises(AnsibleFilterError, match="has no memory_mb.*set shares"):
        shares.gpu_shares([{"uuid": "GPU-X", "memory_mb": None}], memory_per_share_mb=4096)
    # ... but a fixed number of shares does not.
    assert shares.gpu_shares([{"uuid": "GPU-X", "memory_mb": None}], 2) == ["GPU-X", "GPU-X-2"]


# --- gpu_generic_resources -------------------------------------------------------------------


def test_generic_resources_for_daemon_json():
    assert shares.gpu_generic_resources(["GPU-ABCD", "GPU-ABCD-2"]) == ["NVIDIA-GPU=GPU-ABCD", "NVIDIA-GPU=GPU-ABCD-2"]
    assert shares.gpu_generic_resources(["GPU-ABCD"], "gpu") == ["gpu=GPU-ABCD"]


def test_shares_to_generic_resources_end_to_end():
    result = shares.gpu_generic_resources(shares.gpu_shares([{"uuid": ABCD}], 3))
    assert result == ["NVIDIA-GPU=GPU-ABCD", "NVIDIA-GPU=GPU-ABCD-2", "NVIDIA-GPU=GPU-ABCD-3"]


@pytest.mark.parametrize("ids, kind, words", [
    (["0"], "NVIDIA-GPU", "is a number"),
    (["GPU-A", "GPU-A"], "NVIDIA-GPU", "listed twice"),
    (["GPU-A=B"], "NVIDIA-GPU", "invalid share id"),
    ([""], "NVIDIA-GPU", "invalid share id"),
    ([3], "NVIDIA-GPU", "invalid share id"),
    ("GPU-A", "NVIDIA-GPU", "expects a list"),
    (["GPU-A"], "NVIDIA GPU", "invalid generic resource kind"),
    (["GPU-A"], "GPU=1", "invalid generic resource kind"),
    (["GPU-A"], "", "invalid generic resource kind"),
    (["GPU-A"], None, "invalid generic resource kind"),
])
def test_generic_resources_refuse_what_swarm_would_misread(ids, kind, words):
    with pytest.raises(AnsibleFilterError, match=words):
        shares.gpu_generic_resources(ids, kind)


# --- the kind in daemon.json and in the NVIDIA runtime's config.toml agree ----------------


def swarm_task_environment(node_generic_resources, assigned):
    """What Swarm puts into a task's environment, as swarmkit does it.

    swarmkit's genericresource.ParseCmd splits each 'kind=value' of the node's
    node-generic-resources; EnvFormat then names the variable
    strings.ToUpper("DOCKER_RESOURCE" + "_" + kind) and joins the assigned values with ','.
    """
    env = {}
    for term in node_generic_resources:
        kind, value = (part.strip() for part in term.split("="))
        if value in assigned:
            name = ("DOCKER_RESOURCE" + "_" + kind).upper()
            env[name] = ",".join(filter(None, [env.get(name), value]))
    return env


def runtime_config_toml(kind):
    """The swarm-resource line of /etc/nvidia-container-runtime/config.toml, rendered as a role would."""
    return ('disable-require = false\n'
            f'swarm-resource = "{shares.gpu_swarm_resource_env(kind)}"\n\n'
            '[nvidia-container-cli]\nldconfig = "@/sbin/ldconfig.real"\n')


@pytest.mark.parametrize("kind, variable", [
    ("NVIDIA-GPU", "DOCKER_RESOURCE_NVIDIA-GPU"),   # the default
    ("gpu", "DOCKER_RESOURCE_GPU"),                 # a lower-case kind ($DOCKER_RESOURCE_GPU)
    ("Tesla.GPU_v2", "DOCKER_RESOURCE_TESLA.GPU_V2"),
])
def test_the_runtime_reads_the_variable_swarm_sets(kind, variable):
    node = shares.gpu_generic_resources(shares.gpu_shares([{"uuid": ABCD}, {"uuid": "GPU-EFGH"}], 2), kind)
    env = swarm_task_environment(node, assigned={"GPU-EFGH"})
    config = tomllib.loads(runtime_config_toml(kind))
    assert config["swarm-resource"] == variable
    assert env == {variable: "GPU-EFGH"}
    assert env.get(config["swarm-resource"]) == "GPU-EFGH"


def test_the_default_kinds_agree():
    assert shares.gpu_swarm_resource_env(shares.DEFAULT_KIND) == "DOCKER_RESOURCE_NVIDIA-GPU"
    node = shares.gpu_generic_resources([ABCD])
    assert swarm_task_environment(node, {ABCD}) == {shares.gpu_swarm_resource_env(shares.DEFAULT_KIND): ABCD}


def test_a_kind_mismatch_gives_the_container_no_gpu():
    # The negative control: advertised as NVIDIA-GPU, runtime told to read DOCKER_RESOURCE_GPU.
    env = swarm_task_environment(shares.gpu_generic_resources([ABCD]), {ABCD})
    config = tomllib.loads(runtime_config_toml("gpu"))
    assert config["swarm-resource"] not in env


@pytest.mark.parametrize("kind", ["", "NVIDIA GPU", "a=b", "1GPU", None, 3])
def test_swarm_resource_env_refuses_bad_kinds(kind):
    with pytest.raises(AnsibleFilterError, match="invalid generic resource kind"):
        shares.gpu_swarm_resource_env(kind)


# --- spark_gpu_discovery ---------------------------------------------------------------------


def test_spark_discovery_json():
    text = shares.spark_gpu_discovery([0, 1])
    assert text == '{"name": "gpu", "addresses": ["0", "1"]}'
    assert json.loads(text) == {"name": "gpu", "addresses": ["0", "1"]}


def test_spark_discovery_from_the_facts_indexes_and_strings():
    assert json.loads(shares.spark_gpu_discovery(["0", "3", 7]))["addresses"] == ["0", "3", "7"]


@pytest.mark.parametrize("addresses, words", [
    ([], "no GPU address"),
    ([0, "0"], "listed twice"),
    ([True], "invalid GPU address"),
    ([None], "invalid GPU address"),
    (["0 1"], "invalid GPU address"),
    ("01", "expects a list"),
])
def test_spark_discovery_refuses_nonsense(addresses, words):
    with pytest.raises(AnsibleFilterError, match=words):
        shares.spark_gpu_discovery(addresses)


def test_filters_are_registered():
    assert set(shares.FilterModule().filters()) == {
        "gpu_shares", "gpu_generic_resources", "gpu_swarm_resource_env", "spark_gpu_discovery"}
