"""The server sizes a hub user chooses from (roles/jupyterhub/files/sparkfleet_profiles.py)."""

import html.parser
import importlib.util

import pytest

from conftest import ROOT

spec = importlib.util.spec_from_file_location("sparkfleet_profiles", ROOT / "roles" / "jupyterhub" / "files" / "sparkfleet_profiles.py")
profiles = importlib.util.module_from_spec(spec)
spec.loader.exec_module(profiles)

LAB = [
    {"name": "cpu", "display_name": "CPU only", "cpu_limit": 1, "mem_limit": "1G", "constraints": ["node.labels.gpu != true"]},
    {"name": "gpu-share", "display_name": "One GPU share", "gpu_shares": 1, "constraints": ["node.labels.gpu == true"],
     "groups": ["gpu-users"]},
    {"name": "gpu-whole", "display_name": "A whole GPU <2 shares>", "gpu_shares": 2, "mem_limit": "2G",
     "constraints": ["node.labels.gpu == true"], "groups": ["gpu-admins"]},
]


def test_each_user_is_offered_what_their_groups_allow():
    assert [p["name"] for p in profiles.allowed(LAB, [])] == ["cpu"]
    assert [p["name"] for p in profiles.allowed(LAB, ["gpu-users"])] == ["cpu", "gpu-share"]
    assert [p["name"] for p in profiles.allowed(LAB, ["gpu-users", "gpu-admins"])] == ["cpu", "gpu-share", "gpu-whole"]
    assert [p["name"] for p in profiles.allowed(LAB, [], admin=True)] == ["cpu", "gpu-share", "gpu-whole"]


class Radios(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.inputs = []

    def handle_starttag(self, tag, attrs):
        if tag == "input":
            self.inputs.append(dict(attrs))


def test_the_form_is_radio_buttons_the_first_checked_and_escaped():
    parser = Radios()
    parser.feed(profiles.form(profiles.allowed(LAB, ["gpu-admins"])))
    assert [(i["type"], i["name"], i["value"]) for i in parser.inputs] == [
        ("radio", "profile", "cpu"), ("radio", "profile", "gpu-whole")]
    assert "checked" in parser.inputs[0] and "checked" not in parser.inputs[1]
    assert "A whole GPU &lt;2 shares&gt;" in profiles.form(LAB)
    # One profile: nothing to choose, no form (the server starts at once).
    assert profiles.form(LAB[:1]) == ""


def test_a_choice_is_checked_again_at_start():
    mine = profiles.allowed(LAB, ["gpu-users"])
    assert profiles.choose(mine, "gpu-share")["name"] == "gpu-share"
    assert profiles.choose(mine, "")["name"] == "cpu"
    with pytest.raises(profiles.ProfileError, match="'gpu-whole' is not one you may choose"):
        profiles.choose(mine, "gpu-whole")
    with pytest.raises(profiles.ProfileError, match="no server size"):
        profiles.choose([], "cpu")
    assert profiles.from_form({"profile": ["gpu-share"], "_xsrf": ["x"]}) == {"profile": "gpu-share"}
    assert profiles.from_form({}) == {"profile": ""}


DEFAULTS = {"cpu_limit": 2.0, "mem_limit": "4G", "gpu_constraints": ["node.labels.gpu == true"]}


def test_the_swarm_reservation_and_placement_follow_the_choice():
    share = profiles.settings(LAB[1], ["node.role == worker"], "NVIDIA-GPU", DEFAULTS)
    assert share == {"cpu_limit": 2.0, "mem_limit": "4G",
                     "extra_resources_spec": {"generic_resources": {"NVIDIA-GPU": 1}},
                     "extra_placement_spec": {"constraints": ["node.role == worker", "node.labels.gpu == true"]}}
    cpu = profiles.settings(LAB[0], ["node.role == worker"], "NVIDIA-GPU", DEFAULTS)
    assert cpu["extra_resources_spec"] == {}
    assert cpu["cpu_limit"] == 1.0 and cpu["mem_limit"] == "1G"
    assert cpu["extra_placement_spec"]["constraints"] == ["node.role == worker", "node.labels.gpu != true"]
    # GPU shares without constraints of their own: placed where the GPU shares are.
    implicit = profiles.settings({"name": "g", "gpu_shares": 1}, [], "NVIDIA-GPU", DEFAULTS)
    assert implicit["extra_placement_spec"]["constraints"] == ["node.labels.gpu == true"]
    assert profiles.settings({"name": "c"}, [], "NVIDIA-GPU", DEFAULTS)["extra_placement_spec"]["constraints"] == []


def test_a_memory_limit_in_bytes_is_an_integer():
    # JupyterHub reads a string as a number and a unit suffix: "4294967296" would be refused.
    chosen = profiles.settings({"name": "big", "mem_limit": "4294967296"}, [], "NVIDIA-GPU", DEFAULTS)
    assert chosen["mem_limit"] == 4294967296
    assert profiles.settings({"name": "d"}, [], "NVIDIA-GPU", dict(DEFAULTS, mem_limit=1073741824))["mem_limit"] == 1073741824
