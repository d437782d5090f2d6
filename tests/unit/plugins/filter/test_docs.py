"""Every exported filter is documented the way ansible-doc reads a Galaxy collection.

A plugin file that holds several filters cannot carry one DOCUMENTATION string
per filter, so each filter has a sidecar ``plugins/filter/<name>.yml`` with
DOCUMENTATION, EXAMPLES and RETURN. These tests keep the sidecars and the code
in step: a filter added, renamed or given a new argument without its
documentation fails here.
"""

import inspect
import re

import pytest
import yaml
from ansible.parsing.plugin_docs import read_docstring_from_yaml_file
from jinja2 import nodes

from conftest import ROOT, RoleRenderer, load_plugin

FILTER_DIR = ROOT / "plugins" / "filter"
GALAXY = yaml.safe_load((ROOT / "galaxy.yml").read_text(encoding="utf-8"))
COLLECTION = f"{GALAXY['namespace']}.{GALAXY['name']}"


def _exported_filters():
    filters = {}
    for path in sorted(FILTER_DIR.glob("*.py")):
        if path.name == "__init__.py":
            continue
        module = load_plugin("filter", path.stem)
        if hasattr(module, "FilterModule"):
            for name, func in module.FilterModule().filters().items():
                assert name not in filters, f"filter {name} is exported by two plugin files"
                filters[name] = func
    return filters


FILTERS = _exported_filters()
NAMES = sorted(FILTERS)


def _docs(name):
    path = FILTER_DIR / f"{name}.yml"
    assert path.is_file(), f"filter {name} has no documentation file plugins/filter/{name}.yml"
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    return raw, read_docstring_from_yaml_file(str(path), verbose=False, ignore_errors=False)


def test_the_filters_are_found():
    assert {"checksum_file_digest", "spark_executor_sizing", "spark_worker_offer"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_sidecar_has_documentation_examples_and_return(name):
    raw, parsed = _docs(name)
    for key in ("DOCUMENTATION", "EXAMPLES", "RETURN"):
        assert raw.get(key), f"plugins/filter/{name}.yml has no {key}"
    assert isinstance(raw["DOCUMENTATION"], dict)
    assert isinstance(raw["EXAMPLES"], str)
    assert isinstance(raw["RETURN"], dict) and "_value" in raw["RETURN"], "RETURN documents the filter's _value"
    # ansible-doc fails on a description line YAML read as a mapping (an unquoted "key: value" in it).
    texts = [raw["DOCUMENTATION"].get("description", [])] + [
        option.get("description", []) for option in raw["DOCUMENTATION"].get("options", {}).values()]
    for text in texts:
        for line in text if isinstance(text, list) else [text]:
            assert isinstance(line, str), f"plugins/filter/{name}.yml: a description entry is not text: {line!r}"
    # What ansible-doc reads from it.
    assert parsed["doc"]["name"] == name
    assert parsed["plainexamples"].strip()
    assert parsed["returndocs"]["_value"]["description"]


@pytest.mark.parametrize("name", NAMES)
def test_documentation_names_the_filter_and_describes_it(name):
    doc = _docs(name)[0]["DOCUMENTATION"]
    assert doc["name"] == name
    for key in ("short_description", "description", "version_added", "author", "options"):
        assert doc.get(key), f"{name}: DOCUMENTATION has no {key}"
    assert doc["options"]["_input"].get("required") is True, f"{name}: the piped value (_input) is required"


# ansible-test 2.19's validate-modules skips filter plugins, so the keys its schema
# allows, and the option references in semantic markup, are checked here.
DOC_KEYS = {"name", "short_description", "description", "version_added", "author", "positional",
            "options", "notes", "seealso", "requirements", "deprecated"}
OPTION_KEYS = {"description", "type", "required", "default", "choices", "elements", "aliases",
               "version_added", "suboptions"}
RETURN_KEYS = {"description", "type", "elements", "returned", "sample", "contains", "version_added"}
TYPES = {"any", "bool", "boolean", "dict", "dictionary", "float", "int", "integer", "list", "path", "raw", "str", "string"}


def _option_references(text):
    """O(name) and O(name=value) that refer to this plugin's own options (not O(fqcn#type:name))."""
    for ref in re.findall(r"\bO\(([^)]*)\)", text):
        if "#" not in ref:
            yield ref.split("=", 1)[0]


def _return_fields(fields, prefix=""):
    for key, field in fields.items():
        yield f"{prefix}{key}", field
        yield from _return_fields(field.get("contains", {}), f"{prefix}{key}.")


@pytest.mark.parametrize("name", NAMES)
def test_documentation_keys_and_markup_are_valid(name):
    raw = _docs(name)[0]
    doc = raw["DOCUMENTATION"]
    assert set(doc) <= DOC_KEYS, f"{name}: unknown DOCUMENTATION keys {sorted(set(doc) - DOC_KEYS)}"
    for option, spec in doc["options"].items():
        assert set(spec) <= OPTION_KEYS, f"{name}: option {option} has unknown keys {sorted(set(spec) - OPTION_KEYS)}"
        assert spec.get("description"), f"{name}: option {option} has no description"
        assert spec.get("type") in TYPES, f"{name}: option {option} has no valid type"
        if "choices" in spec and "default" in spec:
            assert spec["default"] in spec["choices"], f"{name}: default of {option} is not one of its choices"
    for field, spec in _return_fields(raw["RETURN"]):
        assert set(spec) <= RETURN_KEYS, f"{name}: RETURN {field} has unknown keys {sorted(set(spec) - RETURN_KEYS)}"
        assert spec.get("description") and spec.get("type") in TYPES, f"{name}: RETURN {field} needs a description and a type"
    text = yaml.safe_dump([doc, raw["RETURN"]])
    missing = sorted(set(_option_references(text)) - set(doc["options"]))
    assert not missing, f"{name}: O(...) refers to options that do not exist: {missing}"


@pytest.mark.parametrize("name", NAMES)
def test_documented_options_match_the_signature(name):
    """Every argument after the piped value is documented, with its default, in order."""
    doc = _docs(name)[0]["DOCUMENTATION"]
    params = list(inspect.signature(FILTERS[name]).parameters.values())[1:]
    options = {k: v for k, v in doc["options"].items() if k != "_input"}
    assert sorted(options) == sorted(p.name for p in params), f"{name}: documented options differ from the arguments"
    for param in params:
        option = options[param.name]
        if param.default is inspect.Parameter.empty:
            assert option.get("required") is True, f"{name}: {param.name} has no default, so it is required"
            assert "default" not in option
        else:
            assert not option.get("required"), f"{name}: {param.name} has a default, so it is not required"
            assert option.get("default") == param.default, f"{name}: documented default of {param.name}"
    positional = [p.strip() for p in doc.get("positional", "").split(",") if p.strip()]
    assert positional == [p.name for p in params], f"{name}: 'positional' lists the arguments in order"


CONDITIONS = ("when", "that", "failed_when", "changed_when", "until")


def _templates(node, key=None):
    """The Jinja sources of loaded tasks: templated strings, and conditions (bare expressions)."""
    if isinstance(node, dict):
        for k, value in node.items():
            yield from _templates(value, k)
    elif isinstance(node, list):
        for value in node:
            yield from _templates(value, key)
    elif isinstance(node, str):
        if "{{" in node or "{%" in node:
            yield node
        elif key in CONDITIONS:
            yield "{{ " + node + " }}"


@pytest.mark.parametrize("name", NAMES)
def test_examples_call_the_filters_by_fqcn(name):
    """The examples' expressions, as Ansible's Jinja parses and compiles them (the collection's filters
    known by FQCN only): they call this filter, and every filter of the collection, by its FQCN."""
    tasks = yaml.safe_load(_docs(name)[0]["EXAMPLES"])
    assert isinstance(tasks, list) and all(isinstance(t, dict) for t in tasks), "EXAMPLES are a list of tasks"
    environment = RoleRenderer().environment()
    called = set()
    for source in _templates(tasks):
        environment.compile(source)  # a filter it does not know (a short name) fails here
        called |= {node.name for node in environment.parse(source).find_all(nodes.Filter)}
    assert f"{COLLECTION}.{name}" in called, f"EXAMPLES of {name} call it as {COLLECTION}.{name}"
    short = sorted(called & set(NAMES))
    assert not short, f"EXAMPLES of {name} call {short} without the FQCN {COLLECTION}.<name>"


def test_no_sidecar_without_a_filter():
    sidecars = {p.stem for p in FILTER_DIR.glob("*.yml")}
    assert sidecars <= set(NAMES), f"documentation without a filter: {sorted(sidecars - set(NAMES))}"
