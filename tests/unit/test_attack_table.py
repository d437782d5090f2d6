"""The attack table (tests/attack_table.yml): every row names a check that exists, where it says."""

import pathlib
import re

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
TABLE = yaml.safe_load((ROOT / "tests" / "attack_table.yml").read_text())
FROM = {"notebook", "outside", "host", "user", "site", "operator"}


def _names(node):
    """Every play and task name in a playbook or task file, blocks included."""
    if isinstance(node, list):
        for item in node:
            yield from _names(item)
    elif isinstance(node, dict):
        if isinstance(node.get("name"), str):
            yield node["name"]
        for key in ("tasks", "pre_tasks", "post_tasks", "block", "rescue", "always", "handlers"):
            yield from _names(node.get(key, []))


@pytest.mark.parametrize("row", TABLE["rows"], ids=lambda row: row["attempt"][:60])
def test_each_row_names_a_check_that_exists(row):
    assert row["from"] in FROM
    assert row["refusal"].strip()
    assert row["runs"] in ("make test", "real hosts")
    assert (row["runs"] == "real hosts") == bool(row.get("why"))
    path = ROOT / row["check"]["file"]
    assert path.is_file(), path
    if path.suffix == ".py":
        assert re.search(rf"^def {re.escape(row['check']['name'])}\(", path.read_text(), re.M)
    else:
        assert row["check"]["name"] in set(_names(yaml.safe_load(path.read_text())))
