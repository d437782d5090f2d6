"""Shared fixtures: the repository root, plugins importable by path, and a role's defaults and vars
as Ansible's templating sees them."""

import importlib.util
import pathlib
import sys

import pytest
import yaml
from ansible.template import trust_as_template

ROOT = pathlib.Path(__file__).resolve().parents[2]


def load_plugin(kind, name):
    path = ROOT / "plugins" / kind / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"sparkfleet_{kind}_{name}", path)
    if spec.name in sys.modules:
        return sys.modules[spec.name]
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses and pickling look modules up here
    spec.loader.exec_module(module)
    return module


def trusted(value):
    """Strings (also inside lists and dicts) marked as templates, as Ansible marks a role's own files."""
    if isinstance(value, str):
        return trust_as_template(value)
    if isinstance(value, list):
        return [trusted(v) for v in value]
    if isinstance(value, dict):
        return {k: trusted(v) for k, v in value.items()}
    return value


def role_vars(role):
    """A role's defaults/main.yml and vars/main.yml merged (vars win), ready for a Templar."""
    variables = {}
    for name in ("defaults", "vars"):
        variables.update(trusted(yaml.safe_load((ROOT / "roles" / role / name / "main.yml").read_text())))
    return variables


@pytest.fixture(scope="session")
def root():
    return ROOT
