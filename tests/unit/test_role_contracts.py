"""Every role keeps the collection's contract: documented defaults, an argument
spec that matches them (with a `validate` entry point for the preflight play),
and a README that lists every variable."""

import pathlib

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
ROLES = sorted(p.name for p in (ROOT / "roles").iterdir() if (p / "tasks" / "main.yml").exists())


def _yaml(path):
    return yaml.safe_load(path.read_text()) or {}


def test_there_are_roles():
    assert {"common", "java", "spark"} <= set(ROLES)


@pytest.mark.parametrize("role", ROLES)
def test_argument_spec_matches_defaults(role):
    base = ROOT / "roles" / role
    defaults = _yaml(base / "defaults" / "main.yml")
    specs = _yaml(base / "meta" / "argument_specs.yml")["argument_specs"]
    options = specs["main"]["options"]
    assert set(defaults) - set(options) == set(), "defaults without a spec entry"
    assert set(options) - set(defaults) == set(), "spec entries without a default"
    for name, option in options.items():
        assert option.get("type"), f"{name} has no type"
        assert option.get("description"), f"{name} has no description"


@pytest.mark.parametrize("role", ROLES)
def test_validate_entry_point_checks_the_same_options(role):
    base = ROOT / "roles" / role
    specs = _yaml(base / "meta" / "argument_specs.yml")["argument_specs"]
    assert "validate" in specs
    assert specs["validate"]["options"] == specs["main"]["options"]
    assert (base / "tasks" / "validate.yml").exists()
    main_tasks = _yaml(base / "tasks" / "main.yml")
    assert main_tasks[0].get("ansible.builtin.import_tasks") == "validate.yml", "main.yml must start with the checks"


@pytest.mark.parametrize("role", ROLES)
def test_validate_tasks_change_nothing(role):
    allowed = {"ansible.builtin.assert", "ansible.builtin.fail", "ansible.builtin.debug",
               "ansible.builtin.set_fact", "ansible.builtin.include_vars", "ansible.builtin.stat",
               "ansible.builtin.setup", "ansible.builtin.package_facts"}  # read-only modules
    for task in _yaml(ROOT / "roles" / role / "tasks" / "validate.yml"):
        modules = {k for k in task if "." in k}
        assert modules <= allowed, f"validate.yml uses {modules - allowed}"


@pytest.mark.parametrize("role", ROLES)
def test_readme_lists_every_variable(role):
    base = ROOT / "roles" / role
    readme = (base / "README.md").read_text()
    missing = [name for name in _yaml(base / "defaults" / "main.yml") if f"`{name}`" not in readme]
    assert missing == [], f"README.md of {role} does not document {missing}"
