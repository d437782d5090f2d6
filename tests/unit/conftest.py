"""Shared fixtures: the repository root, and plugins importable by path."""

import importlib.util
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def load_plugin(kind, name):
    path = ROOT / "plugins" / kind / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"sparkfleet_{kind}_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def root():
    return ROOT
