"""verify_gpu.yml's exporter check, its expressions as Ansible templates them, on what the exporters serve: this
repository's exporter (run on the recorded two-GPU host of test_gpu_exporter) and dcgm-exporter's exposition."""

import json

import pytest
import yaml

from conftest import ROOT, RoleRenderer
from test_gpu_exporter import NOTEBOOK_CONTAINER, NOTEBOOK_CONTAINER_ID, USERS, FakeDocker, exporter, fake_proc, fake_pynvml

FIXTURES = ROOT / "tests" / "unit" / "fixtures" / "gpu_exporter"
PLAY = yaml.safe_load((ROOT / "playbooks" / "verify_gpu.yml").read_text())[0]
CHECK = next(t for t in PLAY["tasks"] if t["name"] == "Verify GPU | The exporter reports every GPU.")


def sparkfleet_text(tmp_path, lost=()):
    recorded = json.loads((FIXTURES / "nvml_t4_x2.json").read_text())
    holders = exporter.Holders(FakeDocker({NOTEBOOK_CONTAINER_ID: NOTEBOOK_CONTAINER}),
                               proc_root=str(fake_proc(tmp_path / "proc")), user_name=USERS.get)
    collector = exporter.Collector(fake_pynvml(recorded), "gpu-worker-1", holders)
    collector.start()
    recorded["lost"] = list(lost)
    collector.nvml = fake_pynvml(recorded)
    return collector.collect()


def check(kind, content, count=2, status=200):
    renderer = RoleRenderer(extra={
        **CHECK["vars"],
        "ansible_local": {"sparkfleet_gpu_exporter": {"kind": kind, "url": "http://10.0.0.7:9445/metrics"}},
        "ansible_facts": {"nvidia_gpu": {"count": count}},
        "verify_gpu_exporter": {"status": status, "content": content},
    })
    return [renderer.value(condition) for condition in CHECK["ansible.builtin.assert"]["that"]]


def test_every_gpu_up_passes(tmp_path):
    assert check("sparkfleet", sparkfleet_text(tmp_path)) == [True, True]


def test_a_lost_gpu_fails(tmp_path):
    assert check("sparkfleet", sparkfleet_text(tmp_path, lost=[1])) == [True, False]


def test_an_exporter_without_nvml_fails(tmp_path):
    text = 'sparkfleet_gpu_nvml_up{host="gpu-worker-1"} 0\n'
    assert check("sparkfleet", text) == [True, False]


def test_no_answer_fails():
    assert check("sparkfleet", "", status=-1) == [False, False]


@pytest.mark.parametrize("count, expected", [(2, [True, True]), (4, [True, False])])
def test_dcgm_exporter_counts_its_gpus(count, expected):
    assert check("dcgm", (FIXTURES / "dcgm_exporter_t4_x2.txt").read_text(), count=count) == expected
