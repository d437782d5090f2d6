# -*- coding: utf-8 -*-
# Copyright: sparkfleet contributors
# Apache License 2.0
"""Input filters: variable names that carry a role's prefix but that no role declares, and
options given with the wrong shape (a string for a list).

``undeclared_inputs(hostvars, hosts)``
    Ansible ignores a variable nobody reads, so ``spark_worker_memry_mb: 4096`` in an inventory
    silently leaves the worker at its default. Every name a host has that starts with one of the
    collection's role prefixes (``spark_``, ``common_``, ``notebook_`` ...) must be one the roles
    know: an option of an entry point in a ``meta/argument_specs.yml``, a default, a role variable,
    or a result a role publishes (``set_fact``/``register``). The others are returned, each with
    the hosts that have it and the closest declared name.

``wrongly_typed_inputs(hostvars, hosts)``
    Ansible's argument-spec validation accepts ``spark_users: alice`` for a ``list`` option (it splits
    the string on commas) but does not hand the converted value to the role, which then loops over a
    string. Every option an argument spec declares as ``list`` and a host has as a string (or another
    scalar), and every ``dict`` option a host has as a string or a list, is returned with the hosts
    that have it and what to write instead. So is every ``int`` or ``bool`` option of the shared
    mechanisms (platform, secrets, service, download, pki) that a host has as a value Ansible's
    argument check would refuse: the collection's roles call those entry points without that check.
"""

from __future__ import annotations

import difflib
import functools
import os
import re
from collections.abc import Mapping

import yaml

ROLES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "roles")
SET_FACT = ("ansible.builtin.set_fact", "set_fact")
NOT_FACTS = {"cacheable"}
# The shared mechanisms whose entry points the collection's roles call without Ansible's run-time
# argument check (rolespec_validate: false; tests/unit/test_role_contracts.py checks those calls).
SHARED_ROLES = ("platform", "secrets", "service", "download", "pki")
# The strings Ansible's argument check takes for a boolean.
_BOOLEAN_STRINGS = {"yes", "no", "true", "false", "on", "off", "1", "0", "y", "n", "t", "f", "1.0", "0.0"}
TASK_LISTS = ("block", "rescue", "always", "tasks", "pre_tasks", "post_tasks", "handlers")


# libyaml's loader when PyYAML has it: the filters run in a fresh worker process for each task that
# uses them, and read every role's files each time, which the pure-Python loader makes several
# times slower (bench/figures.md).
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _yaml(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return yaml.load(handle, Loader=_LOADER)  # noqa: S506 - a safe loader
    except (OSError, yaml.YAMLError):
        return None


def _published(node, out):
    """Names a task file sets (set_fact keys, register names), recursively through blocks."""
    if isinstance(node, list):
        for item in node:
            _published(item, out)
    elif isinstance(node, Mapping):
        if isinstance(node.get("register"), str):
            out.add(node["register"])
        for key in SET_FACT:
            if isinstance(node.get(key), Mapping):
                out.update(k for k in node[key] if k not in NOT_FACTS)
        for key in TASK_LISTS:
            if key in node:
                _published(node[key], out)


def _prefix(role, names):
    """The prefix of a role's variables: the longest common one ending in '_' (notebook_host and
    notebook_image both use notebook_), else the role's name."""
    common = os.path.commonprefix(sorted(names)) if names else ""
    common = common[: common.rfind("_") + 1]
    return common if len(common) > 1 else role + "_"


@functools.lru_cache(maxsize=4)
def declared_inputs(roles_dir=ROLES_DIR):
    """{'prefixes': [...], 'names': set(...)} for the roles under roles_dir."""
    prefixes, names = set(), set()
    if not os.path.isdir(roles_dir):
        return {"prefixes": [], "names": names}
    for role in sorted(os.listdir(roles_dir)):
        base = os.path.join(roles_dir, role)
        specs = (_yaml(os.path.join(base, "meta", "argument_specs.yml")) or {}).get("argument_specs") or {}
        options = set()
        for spec in specs.values():
            options.update((spec or {}).get("options") or {})
        prefixes.add(_prefix(role, options))
        names |= options
        for part in ("defaults", "vars"):
            names.update(k for k in (_yaml(os.path.join(base, part, "main.yml")) or {}) if not k.startswith("_"))
        tasks_dir = os.path.join(base, "tasks")
        for name in sorted(os.listdir(tasks_dir)) if os.path.isdir(tasks_dir) else []:
            if name.endswith((".yml", ".yaml")):
                published = set()
                _published(_yaml(os.path.join(tasks_dir, name)), published)
                names.update(n for n in published if not n.startswith("_"))
    return {"prefixes": sorted(prefixes, key=len, reverse=True), "names": names}


def undeclared_inputs(hostvars, hosts):
    """[{name, hosts, suggestion, message}] for names with a role prefix that no role declares."""
    return find_undeclared(hostvars, hosts, ROLES_DIR)


def find_undeclared(hostvars, hosts, roles_dir):
    """undeclared_inputs against the roles under roles_dir."""
    known = declared_inputs(roles_dir)
    found = {}
    for host in hosts:
        for name in hostvars[host]:
            if not isinstance(name, str) or name in known["names"]:
                continue
            if any(name.startswith(p) for p in known["prefixes"]):
                found.setdefault(name, []).append(host)
    out = []
    for name in sorted(found):
        prefix = next(p for p in known["prefixes"] if name.startswith(p))
        same_role = sorted(n for n in known["names"] if n.startswith(prefix))
        close = difflib.get_close_matches(name, same_role, n=1, cutoff=0.7)
        hint = f"; did you mean {close[0]}?" if close else "."
        out.append({"name": name, "hosts": sorted(found[name]), "suggestion": close[0] if close else "",
                    "message": f"{name} (set for {', '.join(sorted(found[name]))}): no role of sparkfleet.cluster declares it{hint}"})
    return out


@functools.lru_cache(maxsize=4)
def declared_types(roles_dir=ROLES_DIR):
    """{option: 'list' | 'dict'} for the options the roles under roles_dir declare with one of these types
    (the same in every entry point that declares them), and {option: 'int' | 'bool'} for those of the
    shared mechanisms (SHARED_ROLES)."""
    types = {}
    # The shared mechanisms' calls skip Ansible's run-time argument check (the unit tests check the
    # collection's own calls): a user's value for one of their int or bool options is checked here.
    shared = set()
    if not os.path.isdir(roles_dir):
        return {}
    for role in sorted(os.listdir(roles_dir)):
        specs = (_yaml(os.path.join(roles_dir, role, "meta", "argument_specs.yml")) or {}).get("argument_specs") or {}
        for spec in specs.values():
            for name, option in ((spec or {}).get("options") or {}).items():
                types.setdefault(name, set()).add((option or {}).get("type", "str"))
                if role in SHARED_ROLES:
                    shared.add(name)
    checked = {"list", "dict"}
    return {name: next(iter(kinds)) for name, kinds in types.items()
            if len(kinds) == 1 and kinds <= (checked | {"int", "bool"} if name in shared else checked)}


def _describe(value):
    """'the string 'alice'' - a value's kind and a short rendering of it, for a message."""
    kind = ("string" if isinstance(value, str) else "boolean" if isinstance(value, bool)
            else "number" if isinstance(value, (int, float)) else "list" if isinstance(value, list)
            else type(value).__name__)
    text = str(value) if isinstance(value, str) else repr(value)
    text = " ".join(text.split())
    if len(text) > 40:
        text = text[:37] + "..."
    return f"the {kind} '{text}'" if isinstance(value, str) else f"the {kind} {text}"


def _wrong_type(expected, value):
    if value is None:
        return False
    if expected == "list":
        return not isinstance(value, (list, tuple))
    if expected == "int":
        # As Ansible's argument check converts: a whole number, or a string of one.
        whole = isinstance(value, int) or (isinstance(value, str) and re.fullmatch(r"\s*[-+]?\d+\s*", value))
        return isinstance(value, bool) or not whole
    if expected == "bool":
        return not (isinstance(value, bool) or value in (0, 1)
                    or (isinstance(value, str) and value.strip().lower() in _BOOLEAN_STRINGS))
    return not isinstance(value, Mapping)


def wrongly_typed_inputs(hostvars, hosts):
    """[{name, hosts, expected, message}] for list options given as a scalar, dict options given as a string or list."""
    return find_wrongly_typed(hostvars, hosts, ROLES_DIR)


def find_wrongly_typed(hostvars, hosts, roles_dir):
    """wrongly_typed_inputs against the roles under roles_dir."""
    types = declared_types(roles_dir)
    found = {}
    for host in hosts:
        variables = hostvars[host]
        for name in sorted(n for n in variables if isinstance(n, str) and n in types):
            try:
                # Reading through hostvars templates the value ("{{ query(...) }}" becomes its list);
                # a value that cannot be resolved here (it needs a play's variables) is left to the role.
                value = variables[name]
            except Exception:  # pylint: disable=broad-exception-caught
                continue
            if _wrong_type(types[name], value):
                found.setdefault((name, _describe(value)), ([], value))[0].append(host)
    out = []
    for (name, described), (names, value) in sorted(found.items()):
        expected = types[name]
        if expected == "list" and isinstance(value, str) and "\n" not in value.strip() and 0 < len(value) <= 60:
            items = ", ".join(repr(i.strip()) for i in value.split(",") if i.strip())
            how = f"write it as a YAML list, e.g. {name}: [{items}]"
        elif expected == "list":
            how = f"write it as a YAML list (one item per '- ' line, or {name}: [a, b])"
        elif expected == "int":
            how = f"write a whole number, e.g. {name}: 3600"
        elif expected == "bool":
            how = f"write true or false, e.g. {name}: true"
        else:
            how = f"write it as a YAML mapping (one 'key: value' per line, or {name}: {{key: value}})"
        kind = {"int": "an integer", "bool": "a boolean"}.get(expected, f"a {expected}")
        out.append({"name": name, "hosts": sorted(names), "expected": expected,
                    "message": f"{name} must be {kind} (the type its argument spec declares), got {described} "
                               f"(set for {', '.join(sorted(names))}): {how}."})
    return out


class FilterModule:
    """sparkfleet input filters."""

    def filters(self):
        return {"undeclared_inputs": undeclared_inputs, "wrongly_typed_inputs": wrongly_typed_inputs}
