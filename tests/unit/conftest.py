"""Shared fixtures and helpers: the repository root, plugins importable by path, and THE way the unit
tests render what Ansible renders (RoleRenderer): a role's templates and variables, a playbook's
expressions, as a play would for one host of an inventory."""

import contextlib
import copy
import importlib.util
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import time

import pytest
import yaml
from ansible.errors import AnsibleValueOmittedError
from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

ROOT = pathlib.Path(__file__).resolve().parents[2]


def debian_tool(name, package):
    """The path of Debian's program ``name`` (package ``package``), which a test runs a rendered
    configuration in; `make unit` installs it. Missing: a skip saying so, and under CI=true a failure,
    since CI installs it and the test must run there."""
    path = shutil.which(name) or shutil.which("/usr/sbin/" + name)
    if path is None:
        why = f"{name} is not installed here (apt-get install {package}; `make unit` does)"
        if os.environ.get("CI", "").strip().lower() == "true":
            pytest.fail(f"{why}; CI=true: the test must run there")
        pytest.skip(why)
    return path


def write_nginx_conf(tmp_path, http_body):
    """nginx.conf for a foreground nginx of a test in tmp_path (its pid, log and temp directories
    there), with ``http_body`` inside its http block."""
    for name in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (tmp_path / name).mkdir()
    (tmp_path / "nginx.conf").write_text(f"""
daemon off;
master_process off;
pid {tmp_path}/nginx.pid;
error_log {tmp_path}/error.log;
events {{}}
http {{
    access_log off;
    client_body_temp_path {tmp_path}/body; proxy_temp_path {tmp_path}/proxy; fastcgi_temp_path {tmp_path}/fastcgi;
    uwsgi_temp_path {tmp_path}/uwsgi; scgi_temp_path {tmp_path}/scgi;
{http_body}}}
""")


def free_port():
    """A TCP port on the loopback no one listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def running_nginx(binary, tmp_path, port):
    """The foreground nginx of write_nginx_conf(tmp_path, ...), once it answers on ``port``; stopped after."""
    process = subprocess.Popen([binary, "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf")],  # pylint: disable=consider-using-with
                               stderr=subprocess.PIPE)
    try:
        for _attempt in range(100):
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert process.poll() is None, process.stderr.read().decode()
            time.sleep(0.05)
        yield process
    finally:
        process.terminate()
        process.wait(timeout=10)


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


def _role_file(role, part):
    path = ROOT / "roles" / role / part / "main.yml"
    return trusted(yaml.safe_load(path.read_text()) or {}) if path.exists() else {}


def _with_dependencies(role, seen=None):
    """The role after the roles of its meta/main.yml dependencies (theirs first, recursively), as
    Ansible loads them: a dependency's defaults and vars are the role's too, its own win."""
    seen = [] if seen is None else seen
    meta = ROOT / "roles" / role / "meta" / "main.yml"
    dependencies = (yaml.safe_load(meta.read_text()) or {}).get("dependencies") if meta.exists() else None
    for dependency in dependencies or []:
        name = (dependency["role"] if isinstance(dependency, dict) else dependency).rsplit(".", 1)[-1]
        if name not in seen:
            _with_dependencies(name, seen)
    if role not in seen:
        seen.append(role)
    return seen


def facts(vcpus=4, memory_mb=16384, address="10.0.0.5"):
    """The facts a gathered Debian 12 host has, as much of them as the roles read."""
    return {"processor_vcpus": vcpus, "memtotal_mb": memory_mb, "default_ipv4": {"address": address},
            "distribution": "Debian", "distribution_major_version": "12"}


# What RoleRenderer.value and .string give for a value that resolves to `omit`.
OMITTED = object()

_FILTERS = {}
_PLUGIN_LOADER = []


def _collection_filters():
    """Every filter of plugins/filter/, by its FQCN (sparkfleet.cluster.<name>)."""
    if not _FILTERS:
        for path in sorted((ROOT / "plugins" / "filter").glob("*.py")):
            module = load_plugin("filter", path.stem)
            if hasattr(module, "FilterModule"):
                for name, func in module.FilterModule().filters().items():
                    _FILTERS[f"sparkfleet.cluster.{name}"] = func
    return _FILTERS


def _init_plugin_loader():
    """Ansible's own plugins by FQCN (ansible.builtin.env, ansible.builtin.template, ...), once."""
    if not _PLUGIN_LOADER:
        from ansible.plugins.loader import init_plugin_loader  # pylint: disable=import-outside-toplevel

        init_plugin_loader([])
        _PLUGIN_LOADER.append(True)


class RoleRenderer:
    """Ansible's templating (its Templar) as a play runs it on one host of an inventory.

    Variables, lowest precedence first, as Ansible orders them: the role's defaults/main.yml (after
    those of the roles its meta/main.yml depends on), the host's inventory variables (`hostvars`;
    every host gets `facts()` as ansible_facts unless given its own), the role's vars/main.yml
    (after its dependencies'), then `extra` (as -e would). Templated values stay templates, resolved
    lazily as Ansible does. groups['all'], hostvars, inventory_hostname and ansible_managed are set;
    the collection's filters are there by FQCN, Ansible's own plugins by FQCN, and the role's
    templates directory is the search path ({% include %}, lookup('ansible.builtin.template')).

    role=None renders without a role: a playbook's or an inventory's expressions, with `extra`.
    """

    def __init__(self, role=None, groups=None, hostvars=None, extra=None):
        self.base = ROOT / "roles" / role if role else ROOT
        self.templates = self.base / "templates"
        self.defaults, self.vars = {}, {}
        for name in _with_dependencies(role) if role else []:
            self.defaults.update(_role_file(name, "defaults"))
            self.vars.update(_role_file(name, "vars"))
        self.extra = trusted(dict(extra or {}))
        groups = dict(groups or {})
        hosts = sorted({h for members in groups.values() for h in members} | set(hostvars or {}))
        self.groups = {"all": hosts, **groups}
        self.hostvars = {h: {"inventory_hostname": h, "ansible_facts": facts()} for h in hosts}
        for host, values in (hostvars or {}).items():
            self.hostvars[host].update(values)

    def variables(self, host=None):
        host = host or (self.groups["all"][0] if self.groups["all"] else "localhost")
        variables = dict(self.defaults)
        variables.update(self.hostvars.get(host, {"ansible_facts": facts()}))
        variables.update(self.vars)
        variables.update(self.extra)
        variables.update(groups=self.groups, hostvars=self.hostvars, inventory_hostname=host,
                         ansible_managed="Ansible managed", role_path=str(self.base),
                         ansible_search_path=[str(self.base)])
        return variables

    def templar(self, host=None):
        _init_plugin_loader()
        loader = DataLoader()
        loader.set_basedir(str(self.base))
        templar = Templar(loader=loader, variables=self.variables(host))
        templar = templar.copy_with_new_env(searchpath=[str(self.templates)])
        templar._engine.environment.filters.update(_collection_filters())  # pylint: disable=protected-access
        return templar

    def environment(self):
        """The Jinja environment Ansible templates with (its own and the collection's filters), to
        parse or compile an expression without rendering it."""
        return self.templar()._engine.environment  # pylint: disable=protected-access

    def render(self, template, host=None):
        """The role's templates/<template>, rendered for host."""
        return self.templar(host).template(trust_as_template((self.templates / template).read_text()))

    def applied(self, host=None):
        """__<role>_applied as the applied-state gate templates it (plugins/action/applied_state.py):
        with the defaults and vars of the roles the role's tasks include (pki's, for a role that
        issues a certificate) under its own."""
        _init_plugin_loader()
        from ansible_collections.sparkfleet.cluster.plugins.action.applied_state import _role_closure  # pylint: disable=import-outside-toplevel
        role = self.base.name
        gate = copy.copy(self)  # the same inventory and extra variables
        gate.defaults, gate.vars = {}, {}
        for name in [n for n in _role_closure(role) if n != role]:
            gate.defaults.update(_role_file(name, "defaults"))
            gate.vars.update(_role_file(name, "vars"))
        gate.defaults.update(self.defaults)
        gate.vars.update(self.vars)
        return gate.value("__%s_applied" % role, host)

    def value(self, expression, host=None):
        """A Jinja expression (a variable's name, a filter chain, a condition) resolved for host;
        OMITTED where it resolves to `omit`."""
        return self.string("{{ " + expression + " }}", host)

    def string(self, value, host=None):
        """A play's or task's value (a string, or a list or dict of them) as Ansible templates it for
        host; OMITTED where it resolves to `omit` (the argument is left out)."""
        try:
            return self.templar(host).template(trusted(value))
        except AnsibleValueOmittedError:
            return OMITTED

    def play_hosts(self, pattern):
        """The hosts of this inventory a play's `hosts:` selects: the pattern templated (on the
        controller), then resolved by Ansible's inventory (groups, :&, :!)."""
        inventory = InventoryManager(loader=DataLoader(), sources=[])
        for group, members in self.groups.items():
            if group != "all":
                inventory.add_group(group)
            for host in members:
                inventory.add_host(host, group=None if group == "all" else group)
        inventory.reconcile_inventory()
        return sorted(h.name for h in inventory.get_hosts(self.string(pattern, "localhost")))


@pytest.fixture(scope="session")
def root():
    return ROOT
