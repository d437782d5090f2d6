"""Shared fixtures: the repository root, and plugins importable by path."""

import importlib.util
import pathlib
import sys

import pytest

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


@pytest.fixture(scope="session")
def root():
    return ROOT
