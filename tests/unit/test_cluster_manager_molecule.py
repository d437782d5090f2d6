"""The mirror-gated Molecule scenarios never pass silently: each step imports either its real
playbook or molecule/hadoop/skipped.yml (which prints why), chosen when the playbook is loaded,
under the same condition, so nothing is created, converged or verified when skipping."""

import pathlib

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
GATES = {"hadoop": ["SPARKFLEET_ARTIFACT_MIRROR"], "livy": ["SPARKFLEET_ARTIFACT_MIRROR"],
         "mesos": ["SPARKFLEET_MESOS_URL", "SPARKFLEET_MESOS_CHECKSUM"]}
REAL = {"create": "/playbooks/create.yml", "converge": "converge_layers.yml"}
VERIFY = {"hadoop": "verify_yarn.yml", "livy": "verify_livy.yml", "mesos": "verify_mesos.yml"}


def _step(scenario, step):
    base = ROOT / "molecule" / scenario
    playbooks = yaml.safe_load((base / "molecule.yml").read_text())["provisioner"]["playbooks"]
    path = (base / playbooks.get(step, "../hadoop/create.yml" if step == "create" else step)).resolve()
    return path, yaml.safe_load(path.read_text())


@pytest.mark.parametrize("scenario", sorted(GATES))
@pytest.mark.parametrize("step", ["create", "converge", "verify"])
def test_each_step_imports_the_real_playbook_or_the_reason(scenario, step):
    path, plays = _step(scenario, step)
    (play,) = plays
    assert set(play) == {"name", "ansible.builtin.import_playbook", "vars"}
    choice = play["ansible.builtin.import_playbook"]
    for gate in GATES[scenario]:
        assert f"lookup('ansible.builtin.env', '{gate}') | length > 0" in choice
    real = REAL.get(step, VERIFY[scenario])
    assert real in choice.split(" if ")[0]
    skipped = choice.rsplit("else", 1)[1].strip(" '}\n")
    assert (path.parent / skipped).resolve() == ROOT / "molecule" / "hadoop" / "skipped.yml"
    assert play["vars"]["skip_step"] == step
    for gate in GATES[scenario]:
        assert gate in play["vars"]["skip_reason"]
    # The real playbook exists (relative to the step's directory).
    if step != "create":
        target = choice.split(" if ")[0].strip(" {}()'\n")
        assert (path.parent / target).is_file(), target


def test_the_skip_playbook_prints_and_touches_no_host():
    (play,) = yaml.safe_load((ROOT / "molecule" / "hadoop" / "skipped.yml").read_text())
    assert play["hosts"] == "localhost" and play["gather_facts"] is False
    (task,) = play["tasks"]
    assert "SKIPPED" in task["ansible.builtin.debug"]["msg"] and "skip_reason" in task["ansible.builtin.debug"]["msg"]
