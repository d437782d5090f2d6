"""What the roles trust to sign packages: apt keys pinned by fingerprint (the platform role's apt_key
entry point, one route for the docker, nvidia_container_toolkit and monitoring (Grafana) roles) and
NVIDIA's cuda-keyring package pinned by checksum (through the download role), never on the distro
methods' paths.

The check itself (plugins/filter/openpgp.py) is tested on real keys in
tests/unit/plugins/filter/test_openpgp.py; these tests hold the roles to using it."""

import json
import os
import pathlib
import re
import subprocess
import sys

import pytest
import yaml

from conftest import ROOT, RoleRenderer, facts

PUBLISHED = {  # The fingerprints the vendors' install documentation prints.
    ("docker", "docker_repo_gpg_key_fingerprints"): "9DC858229FC7DD38854AE2D88D81803C0EBFCD88",
    ("nvidia_container_toolkit", "nvidia_container_toolkit_gpg_key_fingerprints"): "C95B321B61E88C1809C4F759DDCAE044F796ECB0",
    # Grafana's apt.grafana.com page since its 2023-08-24 rotation (the same primary key after its 2025 expiry extension).
    ("monitoring", "monitoring_grafana_gpg_key_fingerprints"): "B53AE77BADB630A683046005963FA27710458545",
}
KEY_ROLES = {"docker": ("repository.yml", "docker_repo_gpg_key"),
             "nvidia_container_toolkit": ("install.yml", "nvidia_container_toolkit_gpg_key"),
             "monitoring": ("grafana.yml", "monitoring_grafana_gpg_key")}


def _tasks(path):
    def walk(tasks):
        for task in tasks or []:
            yield task
            for key in ("block", "rescue", "always"):
                yield from walk(task.get(key))
    return list(walk(yaml.safe_load((ROOT / path).read_text())))


def _task(path, name):
    [task] = [t for t in _tasks(path) if t.get("name") == name]
    return task


def _conditions(task):
    that = task["ansible.builtin.assert"]["that"]
    return [that] if isinstance(that, str) else that


def _holds(renderer, task, host="h"):
    return all(renderer.value(f"({c}) | bool", host) for c in _conditions(task))


def _yaml(path):
    return yaml.safe_load((ROOT / path).read_text())


@pytest.mark.parametrize("role, variable", sorted(PUBLISHED))
def test_the_defaults_pin_the_vendors_published_keys(role, variable):
    assert _yaml(f"roles/{role}/defaults/main.yml")[variable] == [PUBLISHED[(role, variable)]]


@pytest.mark.parametrize("role", sorted(KEY_ROLES))
def test_each_signing_key_goes_through_the_pinned_route(role):
    """The key is fetched by the platform role's apt_key entry point, handed the role's pins and the
    variable's name for the refusal, before the sources file that trusts it is written."""
    file, prefix = KEY_ROLES[role]
    tasks = _tasks(f"roles/{role}/tasks/{file}")
    calls = [t for t in tasks if t.get("ansible.builtin.include_role", {}).get("tasks_from") == "apt_key"]
    assert len(calls) == 1
    given = calls[0]["vars"]
    assert given["platform_apt_key_url"] == "{{ " + prefix + "_url }}"
    assert given["platform_apt_key_fingerprints"] == "{{ " + prefix + "_fingerprints }}"
    assert given["platform_apt_key_fingerprints_variable"] == prefix + "_fingerprints"
    sources = [i for i, t in enumerate(tasks) if "ansible.builtin.template" in t and "sources" in json.dumps(t)]
    assert sources and tasks.index(calls[0]) < min(sources)
    assert not any("ansible.builtin.get_url" in t for t in tasks), "a second, unchecked fetch"


def test_no_role_fetches_an_apt_key_another_way():
    for path in sorted((ROOT / "roles").glob("*/tasks/*.yml")):
        if path.relative_to(ROOT).as_posix() == "roles/platform/tasks/apt_key.yml":
            continue
        for task in _tasks(path.relative_to(ROOT)):
            text = json.dumps(task)
            assert not ("ansible.builtin.get_url" in task and re.search(r"keyring|gpg", text)), f"{path}: {task['name']}"
            assert "ansible.builtin.apt_key" not in task, f"{path}: {task['name']}"
            deb = (task.get("ansible.builtin.apt") or {}).get("deb", "")
            assert "://" not in deb and "_url" not in deb, f"{path}: {task['name']} installs a .deb straight from a URL"


FIXTURES = ROOT / "tests/unit/plugins/filter/fixtures/openpgp"
PINNED_FPR = "DFE40E98A58499373AC25BE7F97F87765E20F546"  # tests/unit/plugins/filter/fixtures/openpgp/pinned.asc
ANSIBLE_PLAYBOOK = pathlib.Path(sys.executable).parent / "ansible-playbook"
INSTALLED = r"Install the checked key where apt reads it\.\] \**\s*changed: \[localhost\]"


def _apt_key(tmp_path, url):
    """Run the platform role's apt_key entry point on this machine (local connection) into tmp_path."""
    play = tmp_path / "play.yml"
    play.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": [{
        "ansible.builtin.include_role": {"name": "sparkfleet.cluster.platform", "tasks_from": "apt_key"},
        "vars": {"platform_apt_key_url": url, "platform_apt_key_path": str(tmp_path / "keyrings/vendor.asc"),
                 "platform_apt_key_fingerprints": [PINNED_FPR],
                 "platform_apt_key_fingerprints_variable": "vendor_gpg_key_fingerprints"}}]}]))
    (tmp_path / "ansible.cfg").write_text("[defaults]\n")
    env = dict(os.environ, ANSIBLE_CONFIG=str(tmp_path / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_COLLECTIONS_PATH=str(ROOT / "collections"), ANSIBLE_LOCALHOST_WARNING="false",
               ANSIBLE_PYTHON_INTERPRETER=sys.executable)
    done = subprocess.run([str(ANSIBLE_PLAYBOOK), "-i", "localhost,", "-c", "local", str(play)],
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    return done.returncode, " ".join((done.stdout + done.stderr).split())


@pytest.mark.skipif(not ANSIBLE_PLAYBOOK.exists(), reason="ansible-playbook is not installed beside this Python")
def test_apt_key_writes_only_a_pinned_key_and_fetches_nothing_while_the_installed_one_passes(tmp_path):
    keyring = tmp_path / "keyrings/vendor.asc"
    served = tmp_path / "served.asc"
    # A key that is not pinned (a swapped key at the URL) is refused and nothing is written.
    served.write_text((FIXTURES / "other.asc").read_text())
    code, out = _apt_key(tmp_path, served.as_uri())
    assert code != 0 and "not among vendor_gpg_key_fingerprints" in out and not keyring.exists()
    # The pinned one is written, changed.
    served.write_text((FIXTURES / "pinned.asc").read_text())
    code, out = _apt_key(tmp_path, served.as_uri())
    assert code == 0 and re.search(INSTALLED, out) and keyring.read_text() == served.read_text()
    # Installed and still pinned: kept, and the URL is not fetched (it serves nothing now: a fetch fails).
    served.unlink()
    code, out = _apt_key(tmp_path, served.as_uri())
    assert code == 0 and re.search(r"ok=\d+ changed=0 ", out)
    # An installed key the pins no longer accept is fetched again and replaced.
    keyring.write_text((FIXTURES / "other.asc").read_text())
    served.write_text((FIXTURES / "pinned.asc").read_text())
    code, out = _apt_key(tmp_path, served.as_uri())
    assert code == 0 and re.search(INSTALLED, out) and keyring.read_text() == served.read_text()


@pytest.mark.parametrize("role, variable, method", [
    ("docker", "docker_repo_gpg_key_fingerprints", {"docker_method": "docker_repo"}),
    ("nvidia_container_toolkit", "nvidia_container_toolkit_gpg_key_fingerprints", {}),
])
@pytest.mark.parametrize("pins, ok", [
    (None, True),
    ([], False),
    (["0EBFCD88"], False),
    (["9DC8 5822 9FC7 DD38 854A  E2D8 8D81 803C 0EBF CD88"], True),
    (["9DC858229FC7DD38854AE2D88D81803C0EBFCD88", "not-a-fingerprint"], False),
], ids=["defaults", "empty", "short id", "spaced", "one bad"])
def test_validate_refuses_an_empty_or_malformed_pin(role, variable, method, pins, ok):
    title = "Docker" if role == "docker" else "NVIDIA container toolkit"
    name = (f"{title} | Check the pinned fingerprints of Docker's signing key." if role == "docker"
            else f"{title} | Check the pinned fingerprints of the repository's signing key.")
    task = _task(f"roles/{role}/tasks/validate.yml", name)
    extra = dict(method)
    if pins is not None:
        extra[variable] = pins
    renderer = RoleRenderer(role, hostvars={"h": {}}, extra=extra)
    assert renderer.value(task["when"], "h") is True
    assert _holds(renderer, task) is ok
    if not ok:
        assert variable in task["ansible.builtin.assert"]["fail_msg"]


def test_docker_from_debian_needs_no_pin():
    task = _task("roles/docker/tasks/validate.yml", "Docker | Check the pinned fingerprints of Docker's signing key.")
    assert RoleRenderer("docker", hostvars={"h": {}}).value(task["when"], "h") is False


# --- The cuda-keyring package ------------------------------------------------------------------

KEYRING = {"nvidia_driver": ("sources.yml", "nvidia_driver_method", "NVIDIA driver"),
           "cuda": ("install.yml", "cuda_method", "CUDA")}


def _host(distribution, version, arch="x86_64"):
    return {"h": {"ansible_facts": {**facts(), "distribution": distribution, "distribution_major_version": version.split(".")[0],
                                    "distribution_version": version, "architecture": arch, "os_family": "Debian"}}}


@pytest.mark.parametrize("role", sorted(KEYRING))
@pytest.mark.parametrize("host, checksum", [
    (_host("Debian", "12"), "sha256:e7f219eab6fe4819cdb5c15b98233dc3420302d9c00883219cd3d896857cf48d"),
    (_host("Ubuntu", "22.04"), "sha256:d93190d50b98ad4699ff40f4f7af50f16a76dac3bb8da1eaaf366d47898ff8df"),
], ids=["debian12", "ubuntu2204"])
def test_the_keyring_package_is_fetched_through_the_download_role_with_this_hosts_checksum(role, host, checksum):
    file, title = KEYRING[role][0], KEYRING[role][2]
    tasks = _tasks(f"roles/{role}/tasks/{file}")
    fetch = _task(f"roles/{role}/tasks/{file}", f"{title} | Fetch the keyring package once on the controller.")
    assert fetch["ansible.builtin.include_role"]["name"] == "sparkfleet.cluster.download"
    renderer = RoleRenderer(role, hostvars=host)
    assert renderer.string(fetch["vars"]["download_checksum"], "h") == checksum
    url = renderer.string(fetch["vars"]["download_url"], "h")
    assert url.endswith("/cuda-keyring_1.1-1_all.deb") and "://developer.download.nvidia.com/" in url
    install = _task(f"roles/{role}/tasks/{file}", f"{title} | Install the keyring package.")
    assert install["ansible.builtin.apt"]["deb"].startswith("{{ __")  # the host's copy
    names = [t.get("name") for t in tasks]
    assert names.index(fetch["name"]) < names.index(f"{title} | Check the copy against this host's checksum.") \
        < names.index(install["name"])


@pytest.mark.parametrize("role", sorted(KEYRING))
def test_the_distro_method_never_touches_the_keyring(role):
    file, method, title = KEYRING[role]
    block = _task(f"roles/{role}/tasks/{file}", f"{title} | Install NVIDIA's repository keyring, checksum-verified.")
    renderer = RoleRenderer(role, hostvars=_host("Debian", "12"), extra={method: "distro"})
    assert not all(renderer.value(f"({c}) | bool", "h") for c in block["when"])
    check = _task(f"roles/{role}/tasks/validate.yml", f"{title} | Check the keyring package's checksum for this host's repository.")
    assert renderer.value(check["when"], "h") is False


@pytest.mark.parametrize("role", sorted(KEYRING))
@pytest.mark.parametrize("host, ok", [
    (_host("Debian", "12"), True),
    (_host("Ubuntu", "24.04"), True),
    (_host("Debian", "12", "aarch64"), False),
    (_host("Ubuntu", "20.04"), False),
], ids=["debian12", "ubuntu2404", "debian12 sbsa", "ubuntu2004"])
def test_preflight_refuses_a_host_whose_repository_has_no_checksum(role, host, ok):
    title = KEYRING[role][2]
    task = _task(f"roles/{role}/tasks/validate.yml", f"{title} | Check the keyring package's checksum for this host's repository.")
    renderer = RoleRenderer(role, hostvars=host)
    assert renderer.value(task["when"], "h") is True
    assert _holds(renderer, task) is ok
    if not ok:
        message = " ".join(renderer.string(task["ansible.builtin.assert"]["fail_msg"], "h").split())
        assert "has no checksum" in message and "debian12/x86_64" in message
