"""The mirror-gated Molecule scenarios never pass silently: each step imports either its real
playbook or molecule/shared/skipped.yml (which prints why), chosen when the playbook is loaded,
under the same condition, so nothing is created, converged or verified when skipping."""

import os

import pytest
import yaml

from conftest import ROOT, RoleRenderer

GATES = {"livy": ["SPARKFLEET_ARTIFACT_MIRROR"],
         "mesos": ["SPARKFLEET_MESOS_URL", "SPARKFLEET_MESOS_CHECKSUM"]}
REAL = {"converge": "converge_layers.yml"}
VERIFY = {"livy": "verify_livy.yml", "mesos": "verify_mesos.yml"}


def _step(scenario, step):
    base = ROOT / "molecule" / scenario
    playbooks = yaml.safe_load((base / "molecule.yml").read_text())["provisioner"]["playbooks"]
    path = (base / playbooks.get(step, step)).resolve()
    return path, yaml.safe_load(path.read_text())


def _chosen(play, path, monkeypatch, given):
    """The playbook the step imports when the environment has the gates in `given` (and no other)."""
    for gate in {g for gates in GATES.values() for g in gates}:
        if gate in given:
            monkeypatch.setenv(gate, "https://artifacts.example/x" if gate.endswith("URL") else "sha256:" + "0" * 64)
        else:
            monkeypatch.delenv(gate, raising=False)
    chosen = RoleRenderer(extra=play["vars"]).string(play["ansible.builtin.import_playbook"], "localhost").strip()
    return (path.parent / chosen).resolve()


@pytest.fixture(name="molecule_docker")
def fixture_molecule_docker(tmp_path, monkeypatch):
    """create.yml asks python3 where molecule-plugins' docker driver is: here, a python3 that answers
    a directory holding its playbooks/create.yml."""
    driver = tmp_path / "molecule_plugins" / "docker"
    (driver / "playbooks").mkdir(parents=True)
    (driver / "playbooks" / "create.yml").write_text("---\n")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python3").write_text(f"#!/bin/sh\necho {driver}\n")
    (tmp_path / "bin" / "python3").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    return driver


@pytest.mark.parametrize("scenario", sorted(GATES))
@pytest.mark.parametrize("step", ["create", "converge", "verify"])
def test_each_step_imports_the_real_playbook_or_the_reason(scenario, step, monkeypatch, molecule_docker):
    path, plays = _step(scenario, step)
    (play,) = plays
    assert set(play) == {"name", "ansible.builtin.import_playbook", "vars"}
    skipped = ROOT / "molecule" / "shared" / "skipped.yml"
    # Every gate given: the real playbook, which exists.
    real = _chosen(play, path, monkeypatch, GATES[scenario])
    if step == "create":
        assert real == molecule_docker / "playbooks" / "create.yml"
    else:
        assert real.name == REAL.get(step, VERIFY[scenario])
    assert real.is_file(), real
    # Any gate missing: skipped.yml, told which step and why (the gates named).
    for missing in GATES[scenario]:
        assert _chosen(play, path, monkeypatch, set(GATES[scenario]) - {missing}) == skipped
    assert _chosen(play, path, monkeypatch, set()) == skipped
    assert play["vars"]["skip_step"] == step
    for gate in GATES[scenario]:
        assert gate in play["vars"]["skip_reason"]


def test_the_skip_playbook_prints_and_touches_no_host(monkeypatch):
    (play,) = yaml.safe_load((ROOT / "molecule" / "shared" / "skipped.yml").read_text())
    assert play["hosts"] == "localhost" and play["gather_facts"] is False
    (task,) = play["tasks"]
    assert set(task) == {"name", "ansible.builtin.debug"}
    monkeypatch.setenv("MOLECULE_SCENARIO_NAME", "livy")
    message = RoleRenderer(extra={"skip_step": "converge", "skip_reason": "SPARKFLEET_ARTIFACT_MIRROR is not set."}).string(
        task["ansible.builtin.debug"]["msg"], "localhost")
    assert message.startswith("SKIPPED molecule/livy converge: SPARKFLEET_ARTIFACT_MIRROR is not set.")
