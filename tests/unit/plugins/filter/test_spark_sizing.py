"""The sizing filters behind the spark role's derived defaults."""

import pytest
from ansible.errors import AnsibleFilterError

from conftest import load_plugin

sizing = load_plugin("filter", "spark_sizing")
# The sizing settings' defaults (roles/cluster_defaults): the filters take them as arguments.
STEP = 256

N2_HIGHMEM_8 = {"processor_vcpus": 8, "memtotal_mb": 64 * 1024}


def test_reserved_memory_is_a_tenth_with_a_floor_of_one_gib():
    assert sizing.spark_reserved_memory_mb(N2_HIGHMEM_8, STEP) == 6400  # 6553 rounded down to 256
    assert sizing.spark_reserved_memory_mb({"processor_vcpus": 2, "memtotal_mb": 4096}, STEP) == 1024


def test_worker_offers_everything_but_the_reserve():
    assert sizing.spark_worker_resources(N2_HIGHMEM_8, 1, 4096, STEP) == {"cores": 7, "memory_mb": 61440}


def test_worker_never_offers_less_than_one_core_and_512_mib():
    tiny = {"processor_vcpus": 1, "memtotal_mb": 1024}
    assert sizing.spark_worker_resources(tiny, 4, 2048, STEP) == {"cores": 1, "memory_mb": 512}


def test_processor_count_is_used_when_vcpus_are_missing():
    assert sizing.spark_worker_resources({"processor_count": 3, "memtotal_mb": 8192}, 0, 1024, STEP)["cores"] == 3


def test_missing_facts_say_what_to_do():
    with pytest.raises(AnsibleFilterError, match="gather facts"):
        sizing.spark_worker_resources({}, 0, 1024, STEP)


@pytest.mark.parametrize("bad", ["two", None, True, 2.5j])
def test_non_integer_reserve_is_refused(bad):
    with pytest.raises(AnsibleFilterError, match="integer"):
        sizing.spark_worker_resources(N2_HIGHMEM_8, bad, 1024, STEP)


def test_worker_offer_prefers_inventory_overrides():
    hv = {"inventory_hostname": "w1", "spark_worker_cores": "3", "ansible_facts": N2_HIGHMEM_8}
    offer = sizing.spark_worker_offer(hv, 0, STEP)
    assert offer == {"host": "w1", "cores": 3, "memory_mb": 64 * 1024 - 6400}


def test_worker_offer_derives_from_facts_with_reserves():
    hv = {"inventory_hostname": "w2", "ansible_facts": N2_HIGHMEM_8,
          "spark_worker_reserved_cores": 2, "spark_worker_reserved_memory_mb": 2048}
    assert sizing.spark_worker_offer(hv, 0, STEP) == {"host": "w2", "cores": 6, "memory_mb": 63488}


def test_worker_offer_without_facts_names_the_host():
    with pytest.raises(AnsibleFilterError, match="w3"):
        sizing.spark_worker_offer({"inventory_hostname": "w3"}, 0, STEP)


def test_worker_offer_with_both_overrides_needs_no_facts():
    hv = {"inventory_hostname": "w4", "spark_worker_cores": 2, "spark_worker_memory_mb": 4096}
    assert sizing.spark_worker_offer(hv, 0, STEP)["memory_mb"] == 4096


def test_seed_cluster_shape_four_core_executors():
    # A typical Dataproc GPU cluster: 4-core / 18 GB executors on 16-vCPU, ~80 GB workers.
    result = sizing.spark_executor_sizing([{"cores": 16, "memory_mb": 80 * 1024}], 4)
    assert result["cores"] == 4
    assert result["per_worker"] == 4
    assert 18 * 1024 <= result["memory_mb"] <= 20 * 1024
    assert result["memory_mb"] % 128 == 0


def test_executors_fit_on_the_smallest_worker():
    offers = [{"cores": 8, "memory_mb": 30000}, {"cores": 2, "memory_mb": 6000}]
    result = sizing.spark_executor_sizing(offers, 4)
    assert result["cores"] == 2
    assert result["memory_mb"] * result["per_worker"] <= 6000


def test_executor_memory_has_a_floor():
    assert sizing.spark_executor_sizing([{"cores": 8, "memory_mb": 1024}], 1)["memory_mb"] == 512


@pytest.mark.parametrize("offers, max_cores, headroom", [
    ([], 4, 0.1),
    ([{"cores": 2, "memory_mb": 1024}], 0, 0.1),
    ([{"cores": 2, "memory_mb": 1024}], 4, 1.5),
    ([{"cores": 2, "memory_mb": 1024}], 4, "lots"),
])
def test_executor_sizing_rejects_nonsense(offers, max_cores, headroom):
    with pytest.raises(AnsibleFilterError):
        sizing.spark_executor_sizing(offers, max_cores, headroom)


def test_executor_sizing_leaves_out_workers_the_role_refuses():
    # Such a worker fails its own check (roles/spark/tasks/validate.yml), naming it: the others size as before.
    offers = [{"cores": 0, "memory_mb": 4096}, {"cores": 4, "memory_mb": -5}, {"cores": 4, "memory_mb": 8192}]
    assert sizing.spark_executor_sizing(offers, 4) == sizing.spark_executor_sizing(offers[2:], 4)
    assert sizing.spark_executor_sizing([{"cores": 0, "memory_mb": -5}], 4) == {"cores": 1, "memory_mb": 512, "per_worker": 1}


def test_filters_are_registered():
    names = set(sizing.FilterModule().filters())
    assert names == {"spark_reserved_memory_mb", "spark_worker_resources", "spark_worker_offer", "spark_executor_sizing"}


@pytest.mark.parametrize("memtotal_mb", [64298, 64290, 64260, 64300])
def test_a_few_mb_of_memtotal_drift_changes_nothing(memtotal_mb):
    # A kernel update shifts MemTotal by a few MB: the derived figures stay the same.
    facts = {"processor_vcpus": 8, "memtotal_mb": memtotal_mb}
    reserved = sizing.spark_reserved_memory_mb(facts, STEP)
    assert reserved == 6400
    assert sizing.spark_worker_resources(facts, 0, reserved, STEP) == {"cores": 8, "memory_mb": 57856}
    assert sizing.spark_worker_offer({"inventory_hostname": "w", "ansible_facts": facts}, 0, STEP)["memory_mb"] == 57856


def test_without_rounding_the_drift_would_show():
    # The negative control: a step of 1 MiB passes the drift straight through.
    a = sizing.spark_worker_resources({"processor_vcpus": 8, "memtotal_mb": 64298}, 0, 6400, 1)
    b = sizing.spark_worker_resources({"processor_vcpus": 8, "memtotal_mb": 64290}, 0, 6400, 1)
    assert a != b


def test_rounding_step_must_be_positive():
    with pytest.raises(AnsibleFilterError, match="step_mb"):
        sizing.spark_reserved_memory_mb(N2_HIGHMEM_8, 0)


def test_worker_offer_uses_the_callers_defaults_where_the_worker_sets_none():
    # hostvars hold no role defaults: the reserve and step the roles pass apply, the worker's own win.
    hv = {"inventory_hostname": "w5", "ansible_facts": N2_HIGHMEM_8, "spark_worker_reserved_memory_mb": 2048}
    assert sizing.spark_worker_offer(hv, 2, STEP)["cores"] == 6
    assert sizing.spark_worker_offer(dict(hv, spark_worker_reserved_cores=1), 2, STEP)["cores"] == 7
    assert sizing.spark_worker_offer(dict(hv, ansible_facts={"processor_vcpus": 8, "memtotal_mb": 64298}), 0, 1)["memory_mb"] == 62250
    assert sizing.spark_worker_offer(
        dict(hv, ansible_facts={"processor_vcpus": 8, "memtotal_mb": 64298}, spark_memory_rounding_mb=1), 0, STEP)["memory_mb"] == 62250
