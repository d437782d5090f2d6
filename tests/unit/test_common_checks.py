"""The common role's name-resolution check, run for real against stub resolvers."""

import os
import pathlib
import subprocess

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = yaml.safe_load((ROOT / "roles" / "common" / "vars" / "main.yml").read_text())["__common_resolve_script"]


def unresolved(tmp_path, answers, names):
    """Run the role's script with a `getent` that answers from `answers` (name -> hosts line)."""
    stub = tmp_path / "getent"
    cases = "".join(f'  {n}) echo "{line}" ;;\n' for n, line in answers.items())
    stub.write_text(f'#!/bin/sh\n[ "$1" = hosts ] || exit 2\ncase "$2" in\n{cases}  *) exit 2 ;;\nesac\n')
    stub.chmod(0o755)
    env = dict(os.environ, PATH=f"{tmp_path}:{os.environ['PATH']}")
    out = subprocess.run(["/bin/sh", "-c", SCRIPT, "sh", *names], env=env, capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_members_with_real_addresses_pass(tmp_path):
    assert unresolved(tmp_path, {"m1": "10.0.0.2  m1", "w1": "10.0.0.3  w1"}, ["m1", "w1"]) == []


def test_an_unknown_member_is_reported(tmp_path):
    assert unresolved(tmp_path, {"m1": "10.0.0.2  m1"}, ["m1", "w9"]) == ["w9"]


@pytest.mark.parametrize("loopback", ["127.0.1.1", "127.0.0.1", "::1"])
def test_a_member_resolving_to_loopback_is_reported(tmp_path, loopback):
    # Debian's installer writes "127.0.1.1 <hostname>": resolvable, but useless to the cluster.
    assert unresolved(tmp_path, {"m1": f"{loopback}  m1", "w1": "10.0.0.3  w1"}, ["m1", "w1"]) == ["m1"]
