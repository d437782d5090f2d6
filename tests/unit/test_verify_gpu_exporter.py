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


# What the gpu_exporter role records with gpu_exporter_auth (its default).
SECURED = {"url": "https://10.0.0.7:9445/metrics", "user": "prometheus",
           "ca": "/usr/local/share/ca-certificates/sparkfleet-ca.crt"}


def check(kind, content, count=2, status=200, anonymous=401, recorded=None):
    renderer = RoleRenderer(extra={
        **CHECK["vars"],
        "ansible_local": {"sparkfleet_gpu_exporter": {"kind": kind, **(SECURED if recorded is None else recorded)}},
        "ansible_facts": {"nvidia_gpu": {"count": count}},
        "verify_gpu_exporter": {"status": status, "content": content},
        "verify_gpu_exporter_anonymous": {"status": anonymous},
    })
    return [renderer.value(condition) for condition in CHECK["ansible.builtin.assert"]["that"]]


def test_every_gpu_up_passes(tmp_path):
    assert check("sparkfleet", sparkfleet_text(tmp_path)) == [True, True, True]


def test_a_lost_gpu_fails(tmp_path):
    assert check("sparkfleet", sparkfleet_text(tmp_path, lost=[1])) == [True, False, True]


def test_an_exporter_without_nvml_fails(tmp_path):
    text = 'sparkfleet_gpu_nvml_up{host="gpu-worker-1"} 0\n'
    assert check("sparkfleet", text) == [True, False, True]


def test_no_answer_fails():
    assert check("sparkfleet", "", status=-1) == [False, False, True]


@pytest.mark.parametrize("anonymous", [200, -1, 403])
def test_an_exporter_that_does_not_refuse_a_request_without_the_login_fails(tmp_path, anonymous):
    assert check("sparkfleet", sparkfleet_text(tmp_path), anonymous=anonymous) == [True, True, False]


def test_an_exporter_recorded_without_a_login_is_not_asked_without_one(tmp_path):
    plain = {"url": "http://10.0.0.7:9445/metrics"}
    assert check("sparkfleet", sparkfleet_text(tmp_path), anonymous=None, recorded=plain) == [True, True, True]


@pytest.mark.parametrize("count, expected", [(2, [True, True, True]), (4, [True, False, True])])
def test_dcgm_exporter_counts_its_gpus(count, expected):
    assert check("dcgm", (FIXTURES / "dcgm_exporter_t4_x2.txt").read_text(), count=count) == expected


TASKS = {task["name"]: task for task in PLAY["tasks"]}


def test_the_exporter_is_asked_over_tls_with_the_login_and_without_it():
    ask = RoleRenderer(extra={"ansible_local": {"sparkfleet_gpu_exporter": {"kind": "sparkfleet", **SECURED}},
                              "__gpu_exporter_scrape_password": "s3cret"})
    args = ask.string(TASKS["Verify GPU | Ask the GPU exporter for its metrics."]["ansible.builtin.uri"])
    assert {k: args[k] for k in ("url", "ca_path", "url_username", "url_password", "force_basic_auth")} == {
        "url": SECURED["url"], "ca_path": SECURED["ca"], "url_username": "prometheus", "url_password": "s3cret",
        "force_basic_auth": True}
    assert TASKS["Verify GPU | Ask the GPU exporter for its metrics."]["no_log"] is True
    anonymous = ask.string(TASKS["Verify GPU | Ask the GPU exporter without the login."]["ansible.builtin.uri"])
    assert anonymous["status_code"] == [401] and "url_username" not in anonymous and anonymous["ca_path"] == SECURED["ca"]
    login = TASKS["Verify GPU | Read the scrape account's password."]
    wanted = {"name": "sparkfleet.cluster.gpu_exporter", "tasks_from": "scrape_login", "public": True}
    assert login["ansible.builtin.include_role"] == wanted
