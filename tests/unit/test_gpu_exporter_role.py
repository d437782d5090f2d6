"""The gpu_exporter role's units, rendered from its own defaults and vars with the shared RoleRenderer, and the
service role's unit file for them: one kind wanted at a time, on the host's private address and port 9445."""

import re
import shlex

import pytest
import yaml
from ansible.template import trust_as_template

from conftest import ROOT, RoleRenderer, facts


# The certificate's paths as the pki role publishes them (auth.yml keeps them as __gpu_exporter_tls).
TLS = {"key": "/etc/ssl/sparkfleet/gpu-exporter.key", "certificate": "/etc/ssl/sparkfleet/gpu-exporter.crt",
       "ca": "/usr/local/share/ca-certificates/sparkfleet-ca.crt", "changed": False}


def exporter(**extra):
    return RoleRenderer("gpu_exporter", {"gpu_workers": ["gpu-worker-1"], "spark_masters": ["master-1"]},
                        hostvars={"gpu-worker-1": {"ansible_facts": facts(address="10.0.0.7")}},
                        extra={"__gpu_exporter_tls": TLS, "pki_ca_file": TLS["ca"], **extra})


def units(renderer):
    return {unit["name"]: unit for unit in renderer.value("__gpu_exporter_units", "gpu-worker-1")}


def unit_file(unit):
    service = RoleRenderer("service")
    templar = service.templar()
    templar.available_variables = {**service.variables(), "item": unit}
    return templar.template(trust_as_template((service.templates / "unit.service.j2").read_text()))


def test_sparkfleets_exporter_listens_on_the_private_address():
    found = units(exporter())
    assert [name for name, unit in found.items() if unit["wanted"]] == ["sparkfleet-gpu-exporter"]
    argv = shlex.split(found["sparkfleet-gpu-exporter"]["exec_start"])
    assert argv == ["/opt/sparkfleet/gpu-exporter/venv/bin/python3", "-I", "/opt/sparkfleet/gpu-exporter/sparkfleet_gpu_exporter.py",
                    "--listen", "10.0.0.7:9445", "--host", "gpu-worker-1", "--docker-socket", "/run/docker.sock",
                    "--tls-cert", TLS["certificate"], "--tls-key", TLS["key"],
                    "--password-file", "/opt/sparkfleet/gpu-exporter/scrape.passwd"]
    assert exporter().value("__gpu_exporter_url", "gpu-worker-1") == "https://10.0.0.7:9445/metrics"


def test_the_exporter_asks_for_tls_and_the_login_by_default():
    renderer = exporter()
    assert renderer.value("gpu_exporter_auth", "gpu-worker-1") is True
    assert renderer.value("__gpu_exporter_fact", "gpu-worker-1") == {
        "kind": "sparkfleet", "url": "https://10.0.0.7:9445/metrics", "user": "prometheus", "ca": TLS["ca"]}
    assert renderer.value("__gpu_exporter_tls_sans", "gpu-worker-1") == ["IP:10.0.0.7"]
    applied = renderer.applied("gpu-worker-1")
    assert "/opt/sparkfleet/gpu-exporter/scrape.passwd" in applied["files"]


def test_without_auth_it_serves_plain_http_without_a_login():
    renderer = exporter(gpu_exporter_auth=False)
    argv = shlex.split(units(renderer)["sparkfleet-gpu-exporter"]["exec_start"])
    assert not [arg for arg in argv if arg.startswith(("--tls", "--password"))]
    assert renderer.value("__gpu_exporter_url", "gpu-worker-1") == "http://10.0.0.7:9445/metrics"
    assert renderer.value("__gpu_exporter_fact", "gpu-worker-1") == {"kind": "sparkfleet", "url": "http://10.0.0.7:9445/metrics"}
    # Monitoring off: no login by default either (nothing would scrape it).
    assert exporter(monitoring_enabled=False).value("gpu_exporter_auth", "gpu-worker-1") is False


@pytest.mark.parametrize("groups", [{"monitoring": ["mon-1"], "spark_masters": ["master-1"]}, {"spark_masters": ["master-1"]}])
def test_the_scrape_password_is_read_from_the_monitoring_roles_holder(groups):
    """The same cluster secret, from the same holder, as the monitoring role reads it."""
    own = RoleRenderer("gpu_exporter", {"gpu_workers": ["gpu-worker-1"], **groups})
    monitoring = RoleRenderer("monitoring", {"gpu_workers": ["gpu-worker-1"], **groups})
    assert own.value("__gpu_exporter_scrape_holders", "gpu-worker-1") == [monitoring.value("__monitoring_server", "gpu-worker-1")]
    assert own.value("__gpu_exporter_scrape_secret_name", "gpu-worker-1") == monitoring.value("__monitoring_scrape_secret_name", "gpu-worker-1")


def test_an_ipv6_address_and_another_port():
    renderer = exporter(gpu_exporter_listen_address="fd00::7", gpu_exporter_port=19445)
    assert "--listen [fd00::7]:19445" in units(renderer)["sparkfleet-gpu-exporter"]["exec_start"]
    assert renderer.value("__gpu_exporter_url", "gpu-worker-1") == "https://[fd00::7]:19445/metrics"
    assert "IP:fd00::7" in renderer.value("__gpu_exporter_tls_sans", "gpu-worker-1")


def test_dcgm_replaces_it_pinned_by_digest_on_the_same_port():
    found = units(exporter(gpu_exporter_kind="dcgm"))
    assert [name for name, unit in found.items() if unit["wanted"]] == ["sparkfleet-dcgm-exporter"]
    argv = shlex.split(found["sparkfleet-dcgm-exporter"]["exec_start"])
    assert argv[:2] == ["/usr/bin/docker", "run"]
    assert argv[argv.index("--publish") + 1] == "10.0.0.7:9445:9400"
    assert argv[argv.index("--gpus") + 1] == "all"
    assert re.fullmatch(r"nvcr\.io/nvidia/k8s/dcgm-exporter:[^@]+@sha256:[0-9a-f]{64}", argv[-1])
    assert found["sparkfleet-dcgm-exporter"]["after"] == ["docker.service"]


def test_dcgm_exporter_gets_tls_and_the_login_through_its_web_configuration():
    renderer = exporter(gpu_exporter_kind="dcgm")
    argv = shlex.split(units(renderer)["sparkfleet-dcgm-exporter"]["exec_start"])
    mounts = [argv[i + 1] for i, arg in enumerate(argv) if arg == "--volume"]
    assert mounts == [TLS["certificate"] + ":/etc/sparkfleet-dcgm-exporter/tls.crt:ro",
                      TLS["key"] + ":/etc/sparkfleet-dcgm-exporter/tls.key:ro",
                      "/opt/sparkfleet/gpu-exporter/dcgm-web-config.yml:/etc/sparkfleet-dcgm-exporter/web-config.yml:ro"]
    assert argv[argv.index("--env") + 1] == "DCGM_EXPORTER_WEB_CONFIG_FILE=/etc/sparkfleet-dcgm-exporter/web-config.yml"
    assert argv.index("--env") < len(argv) - 1 and argv[-1].startswith("nvcr.io/")
    hashed = exporter(gpu_exporter_kind="dcgm", __gpu_exporter_scrape_hash="$2b$12$" + "x" * 53)
    config = yaml.safe_load(hashed.render("dcgm-web-config.yml.j2", "gpu-worker-1"))
    assert config == {"tls_server_config": {"cert_file": "/etc/sparkfleet-dcgm-exporter/tls.crt",
                                            "key_file": "/etc/sparkfleet-dcgm-exporter/tls.key", "min_version": "TLS12"},
                      "basic_auth_users": {"prometheus": "$2b$12$" + "x" * 53}}
    assert renderer.applied("gpu-worker-1")["packages"] == ["python3-bcrypt"]
    plain = shlex.split(units(exporter(gpu_exporter_kind="dcgm", gpu_exporter_auth=False))["sparkfleet-dcgm-exporter"]["exec_start"])
    assert "--volume" not in plain and "--env" not in plain


@pytest.mark.parametrize("kind", ["sparkfleet", "dcgm"])
def test_the_unit_is_sandboxed_and_keeps_the_gpus_visible(kind):
    name = "sparkfleet-gpu-exporter" if kind == "sparkfleet" else "sparkfleet-dcgm-exporter"
    text = unit_file(units(exporter(gpu_exporter_kind=kind))[name])
    lines = set(text.splitlines())
    assert {"User=root", "NoNewPrivileges=yes", "ProtectSystem=full", "ProtectKernelModules=yes"} <= lines
    assert not [line for line in lines if line.startswith(("PrivateDevices", "DevicePolicy"))]
    assert "Restart=on-failure" in lines


VALIDATE = yaml.safe_load((ROOT / "roles" / "gpu_exporter" / "tasks" / "validate.yml").read_text())


def passes(task_name, **extra):
    """Whether the preflight check task_name passes for these settings (its `when` false counts as passing)."""
    task = next(t for t in VALIDATE if t["name"] == task_name)
    renderer = exporter(**extra)
    if "when" in task and not renderer.value(task["when"], "gpu-worker-1"):
        return True
    return bool(renderer.value(task["ansible.builtin.assert"]["that"], "gpu-worker-1"))


ADDRESS = "GPU exporter | Check the address the exporter listens on."
DIGEST = "GPU exporter | Check that dcgm-exporter's image is pinned by digest."
CHECKSUM = "GPU exporter | Check nvidia-ml-py's checksum."


def test_the_defaults_pass_the_preflight():
    assert passes(ADDRESS) and passes(CHECKSUM) and passes(DIGEST, gpu_exporter_kind="dcgm")


@pytest.mark.parametrize("address", ["0.0.0.0", "::", ""])
def test_every_address_or_none_is_refused(address):
    assert not passes(ADDRESS, gpu_exporter_listen_address=address)


@pytest.mark.parametrize("image", ["nvcr.io/nvidia/k8s/dcgm-exporter:4.5.2-4.8.1-ubuntu22.04",
                                   "nvcr.io/nvidia/k8s/dcgm-exporter@sha256:abc",
                                   "nvcr.io/nvidia/k8s/dcgm-exporter:latest@sha256:" + "A" * 64])
def test_dcgm_exporter_by_tag_or_a_malformed_digest_is_refused(image):
    assert not passes(DIGEST, gpu_exporter_kind="dcgm", gpu_exporter_dcgm_image=image)
    # Only dcgm-exporter's image is checked: sparkfleet's exporter does not run it.
    assert passes(DIGEST, gpu_exporter_dcgm_image=image)


def test_a_checksum_without_its_algorithm_is_refused():
    assert not passes(CHECKSUM, gpu_exporter_nvml_checksum="959bf4adf6fe1308e4bd739e722236b0d1ec8392e2cefad33ff70c311380b9b6")
