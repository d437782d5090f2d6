# -*- coding: utf-8 -*-
# Copyright: sparkfleet contributors
# Apache License 2.0
"""The applied-state gate: which of a play's roles are due on a host.

The controller pays a roughly fixed cost per host and task, skipped ones included, so a re-run
that changes nothing must not run every task of every role on every host. The layer playbooks call
this action once per play instead, and include only the roles *due* on each host: a role is due when

- the host has no record of it (a new host, a role never applied there),
- its inputs differ from those it was applied with: the code of the role and of the roles it
  includes, the collection's plugins, and the values of the variables its files name (templated
  where they read facts, other hosts' variables or lookups: see _stands_for_itself), the
  inventory's groups, and each host's addresses and size,
- or the host drifted: a file the role declares differs from what the role left there, a unit it
  declares is not active and enabled, a package it declares is missing, a probe it declares
  (a command) answers otherwise.

Only due roles run; after the play's handlers, ``state: record`` writes the records of the roles
that ran. What a role declares is ``__<role>_applied`` in its vars/main.yml (files, units,
packages, probes), templated with the role's defaults and vars and the host's variables.
A run limited by --tags/--skip-tags or in check mode records nothing, since it may not have
applied a role whole; ``sparkfleet_skip_unchanged: false`` makes every role due.
The answer also says which roles' checks (their ``validate`` entry point: argument spec and
cross-variable checks) the play runs first, so that each role is checked once per run: in the
preflight pass (``sparkfleet_preflight``) those whose inputs changed, and nothing is due; in the
main pass the due roles no earlier play of this run checked (``checked``, carried from play to
play in the registered answer).

Working out a role's inputs (loading its files, templating the values) is most of the gate's cost,
and the preflight pass has done it for the same hosts and variables: the main pass takes the
preflight's inputs and declarations (``read``, carried in the registered answer, each used once)
as long as no role has been due in this run's main pass on any host (the run's marker file: a role
that ran may have changed what later inputs read, a certificate or a secret). The drift check
still runs.

A host where nothing changed costs a run one call: site.yml first fingerprints what every input
comes from (``sources``: the collection's code, the inventory's groups and each host's variables as
written, the facts the code names, the environment variables its lookups read), then asks each host
(``scan``) whether it is as the last run that went through every layer left it (``mark``, at the
end of site.yml): the same sources, each role's record as then, and no drift in any role (the
records' files, units, packages and probes). Those hosts join the group sparkfleet_unchanged, which
site.yml's plays leave out; the others go through the gates as above.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex

from ansible import constants as C
from ansible.errors import AnsibleError
from ansible.module_utils.common.text.converters import to_text
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase
from ansible.vars.hostvars import HostVars
from ansible_collections.sparkfleet.cluster.plugins.filter.addresses import host_addresses
from ansible_collections.sparkfleet.cluster.plugins.module_utils import applied_state as host_side

COLLECTION = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROLES = os.path.join(COLLECTION, "roles")
IDENTIFIER = re.compile(r"\b[a-z_][a-z0-9_]*\b")
INCLUDED_ROLE = re.compile(r"\bsparkfleet\.cluster\.([a-z_][a-z0-9_]*)\b")
# The run's own switches and Ansible's magic variables: not inputs of what a role applies.
NOT_INPUTS = frozenset((
    "sparkfleet_preflight", "sparkfleet_bake", "sparkfleet_skip_unchanged", "sparkfleet_run_group", "sparkfleet_leave_out",
    "sparkfleet_strict_inputs", "hostvars", "vars", "groups", "play_hosts", "omit", "playbook_dir", "role_path",
    "role_name", "role_names", "inventory_dir", "inventory_file", "environment", "item", "ansible_facts",
    "ansible_play_hosts", "ansible_play_hosts_all", "ansible_play_batch", "ansible_run_tags", "ansible_skip_tags",
    "ansible_check_mode", "ansible_diff_mode", "ansible_forks", "ansible_limit", "ansible_verbosity",
    "ansible_version", "ansible_config_file", "ansible_playbook_python", "ansible_collection_name",
    "ansible_role_names", "ansible_dependent_role_names", "ansible_play_role_names", "ansible_parent_role_names",
    "ansible_parent_role_paths", "ansible_role_name", "ansible_search_path", "ansible_loop_var",
    "ansible_index_var", "ansible_loop", "ansible_inventory_sources", "inventory_hostname_short",
    "ansible_play_name", "ansible_become", "ansible_become_user", "ansible_become_method",
))
RUN_SCOPED = re.compile(r"\b(ansible_play_hosts|ansible_play_hosts_all|ansible_play_batch|play_hosts|ansible_limit)\b")
# A value read from the host's local facts is what a role recorded there (the java role's JAVA_HOME):
# a result, not an input. Its value also depends on whether the run's facts hold the local ones (a
# cached gather of another subset has none), so it would make roles due that nothing changed.
LOCAL_FACTS = re.compile(r"\bansible_local\b")
# What a value may read besides the variables it names, the groups and the host's name: facts,
# other hosts' variables, variables by computed name, lookups.
DYNAMIC = re.compile(r"hostvars|\bvars\b|lookup\(|query\(|\bq\(|ansible_|\bnow\(")
# What of each host's facts a role's result may depend on: where it is, how big, what it runs.
FACTS = ("memtotal_mb", "processor_vcpus", "processor_nproc", "distribution", "distribution_version",
         "architecture", "kernel")

# Groups the collection's playbooks make for one run: not part of the inventory.
RUN_GROUPS = frozenset(("sparkfleet_unchanged", "sparkfleet_replace_converge", "sparkfleet_replaced",
                        "sparkfleet_autoscale_converge", "sparkfleet_removed", "sparkfleet_bake"))
# Facts tasks set during a run (the GPU facts module, getent, service and package facts): what the
# host is, the drift check's; not what a role is asked to make of it.
RUN_FACTS = frozenset(("nvidia_gpu", "getent_passwd", "getent_group", "services", "packages", "local"))
# A container engine's bridges add addresses once it runs: facts gathered before and after disagree.
# What other hosts reach a host at is the peers' view (host_addresses leaves the bridges out).
ENGINE_FACTS = frozenset(("all_ipv4_addresses", "all_ipv6_addresses"))
ENV_LOOKUP = re.compile(r"lookup\(\s*['\"](?:ansible\.builtin\.)?env['\"]\s*,\s*['\"]([A-Za-z_][A-Za-z0-9_]*)['\"]")
NAMED_FACT = re.compile(r"ansible_facts(?:\.|\[['\"])([a-z_][a-z0-9_]*)|\bansible_([a-z_][a-z0-9_]*)")
UNCHANGED_GROUP = "sparkfleet_unchanged"

_CACHE = {}


def _host_side():
    """The text of the host side's module utilities, sent as it is to the host's interpreter."""
    if "host_side" not in _CACHE:
        with open(host_side.__file__, encoding="utf-8") as handle:
            _CACHE["host_side"] = handle.read()
    return _CACHE["host_side"]


def _scan_command(python, path, sources):
    """The scan as a shell command and the script it reads on its standard input (as a pipelined
    module is sent: not in the command line, which sudo logs): the host side
    (module_utils/applied_state.py) run by a plain interpreter. A module's start (AnsiballZ,
    Ansible's module framework) cost more of the host's CPU than the scan itself, and a no-op run
    makes this one call on every host."""
    script = "%s\nprint(json.dumps(scan(%r, %r)))\n" % (_host_side(), path, sources)
    return "%s -I -" % shlex.quote(python), script


def _scan_reasons(rc, stdout, stderr, python):
    """Why the host is not as the last whole run left it (none: it is). A scan that did not answer
    leaves that unknown: the host goes through the layers, whose gates say more."""
    try:
        reasons = json.loads(stdout.strip().splitlines()[-1]) if rc == 0 else None
    except (ValueError, IndexError):
        reasons = None
    if isinstance(reasons, list):
        return reasons
    return ["the scan did not answer (%s, rc %s): %s" % (python, rc, stderr.strip()[-300:])]


def _applied_marker():
    """A file in the run's own temporary directory (Ansible makes one per run, removed at its end,
    shared by the run's worker processes): there once a role was due in this run's main pass."""
    return os.path.join(C.DEFAULT_LOCAL_TMP, "sparkfleet-roles-due")


def _read(path):
    with open(path, "rb") as handle:
        return handle.read()


def _tree(path):
    """Every file under path but docs, in a stable order."""
    out = []
    for root, dirs, names in os.walk(path):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        out.extend(os.path.join(root, n) for n in sorted(names) if not n.endswith((".md", ".pyc")))
    return out


def _role_closure(role):
    """The role and every collection role its tasks include or its meta depends on, at any depth."""
    seen, todo = [], [role]
    while todo:
        name = todo.pop()
        if name in seen or not os.path.isdir(os.path.join(ROLES, name)):
            continue
        seen.append(name)
        for path in _tree(os.path.join(ROLES, name, "tasks")) + _tree(os.path.join(ROLES, name, "meta")):
            todo.extend(INCLUDED_ROLE.findall(to_text(_read(path), errors="replace")))
    return sorted(seen)


def _produced_names():
    """Names the collection's tasks set at run time (register, set_fact): results, not inputs."""
    if "produced" not in _CACHE:
        names = set()
        for top in (ROLES, os.path.join(COLLECTION, "playbooks")):
            for path in _tree(top):
                if not path.endswith(".yml"):
                    continue
                text = to_text(_read(path), errors="replace")
                names.update(re.findall(r"^\s*register:\s*([a-z_][a-z0-9_]*)", text, re.M))
                for block in re.findall(r"set_fact:\s*\n((?:\s{4,}.*\n?)+)", text):
                    indent = len(block) - len(block.lstrip(" "))
                    names.update(re.findall(r"^ {%d}([a-z_][a-z0-9_]*):" % indent, block, re.M))
        names.discard("cacheable")
        _CACHE["produced"] = frozenset(names)
    return _CACHE["produced"]


def _role_code(role):
    """The hash of the role's code (and of the roles it includes, and the plugins), and the
    variable names those files name."""
    if role not in _CACHE:
        digest, names = hashlib.sha256(), set()
        paths = [p for r in _role_closure(role) for p in _tree(os.path.join(ROLES, r))]
        paths += _tree(os.path.join(COLLECTION, "plugins"))
        for path in paths:
            data = _read(path)
            digest.update(os.path.relpath(path, COLLECTION).encode() + b"\0" + data + b"\0")
            if "/plugins/" not in path:
                names.update(IDENTIFIER.findall(to_text(data, errors="replace")))
        _CACHE[role] = (digest.hexdigest(), frozenset(names))
    return _CACHE[role]


def _stands_for_itself(value, own_value):
    """Whether a value of the role's own files, as the host has it, needs no templating to be
    fingerprinted. Templating is most of the gate's cost. A value the role's files set, not
    overridden, that reads nothing but the variables it names, the groups and the host's name, is a
    function of its text (in the code's hash), of those variables (each an input of its own) and of
    the groups (an input): its text stands for it."""
    return value == own_value and not DYNAMIC.search(to_text(value, errors="replace"))


class _ReadOnce:
    """A variable manager whose answer for each host is read once: what one gate call's hostvars
    reads through. Each read costs tens of milliseconds (every variable source of the host, its
    facts cleaned), and the inputs that read every host's variables (the pki role's permitted names,
    Spark's sizing over the workers, the firewalls' address lists), the peers' fingerprint, and each
    role of the call, would otherwise read each host again: a cost per host growing with the hosts."""

    def __init__(self, manager):
        self._manager, self._seen = manager, {}

    def get_vars(self, host=None, include_hostvars=True, **kwargs):
        if host is None or include_hostvars or kwargs:
            return self._manager.get_vars(host=host, include_hostvars=include_hostvars, **kwargs)
        if host.name not in self._seen:
            self._seen[host.name] = self._manager.get_vars(host=host, include_hostvars=False)
        return self._seen[host.name]

    def __getattr__(self, name):
        return getattr(self._manager, name)


def _hostvars_read_once(hostvars):
    """A HostVars (the exact type: the templating engine knows no other) over _ReadOnce."""
    if not isinstance(hostvars, HostVars):
        return hostvars
    once = HostVars.__new__(HostVars)
    once.__dict__.update(hostvars.__dict__)
    once._variable_manager = _ReadOnce(hostvars._variable_manager)  # pylint: disable=protected-access
    return once


def _collection_code():
    """The hash of the collection's roles, plugins and playbooks, the facts they name and the
    environment variables their lookups read."""
    if "collection" not in _CACHE:
        digest, facts, env = hashlib.sha256(), set(), set()
        for top in ("roles", "plugins", "playbooks"):
            for path in _tree(os.path.join(COLLECTION, top)):
                data = _read(path)
                digest.update(os.path.relpath(path, COLLECTION).encode() + b"\0" + data + b"\0")
                text = to_text(data, errors="replace")
                facts.update(a or b for a, b in NAMED_FACT.findall(text))
                env.update(ENV_LOOKUP.findall(text))
        _CACHE["collection"] = (digest.hexdigest(), frozenset(facts) - RUN_FACTS - ENGINE_FACTS, frozenset(env))
    return _CACHE["collection"]


def _inventory_groups(task_vars):
    """The inventory's groups, without those a playbook of the collection made for one run."""
    return dict((g, m) for g, m in (task_vars.get("groups") or {}).items() if g not in RUN_GROUPS)


def _fingerprint(value):
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=repr).encode()).hexdigest()[:16]


class ActionModule(ActionBase):
    """Check a host against its records (``roles``), or record the roles that ran (``record``)."""

    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("roles", "record", "path", "sources", "scan", "mark"))
    _peers_seen = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._loaded = {}

    def _load(self, path):
        """A file of the collection's roles, loaded once a call (read only, so not copied)."""
        if path not in self._loaded:
            self._loaded[path] = (self._loader.load_from_file(path, cache="none", trusted_as_template=True) or {}
                                  if os.path.isfile(path) else {})
        return self._loaded[path]

    def _role_files(self, role, kind):
        return self._load(os.path.join(ROLES, role, kind, "main.yml"))

    def _os_vars(self, role, task_vars):
        """The role's settings for this operating system, as the platform role's os_vars.yml
        loads them: the first of vars/<distribution>-<major>.yml, <distribution>.yml, <family>.yml."""
        facts = task_vars.get("ansible_facts", {}) or {}
        for name in ("%s-%s" % (facts.get("distribution"), facts.get("distribution_major_version")),
                     facts.get("distribution"), facts.get("os_family")):
            path = os.path.join(ROLES, role, "vars", "%s.yml" % name)
            if name and os.path.isfile(path):
                return self._load(path)
        return {}

    def _role_vars(self, role, task_vars):
        """The host's variables as the role sees them: its (and its included roles') defaults
        under the host's variables, their vars above them."""
        merged = {}
        for name in _role_closure(role):
            merged.update(self._role_files(name, "defaults"))
        merged.update(task_vars)
        for name in [r for r in _role_closure(role) if r != role] + [role]:
            merged.update(self._role_files(name, "vars"))
            merged.update(self._os_vars(name, task_vars))
        # Where the template lookups of its vars find their templates, as inside the role.
        merged["ansible_search_path"] = [os.path.join(ROLES, name) for name in [role] + _role_closure(role)]
        return merged

    def _template(self, templar, value):
        try:
            return templar.template(value)
        except Exception:  # pylint: disable=broad-except  # an input that cannot be resolved here counts as written
            return value

    def _peers(self, task_vars):
        """Each host's address and size, as far as this run knows them (read once a call: every role's
        inputs have it). The facts are read as gathered: data, nothing to template."""
        if self._peers_seen is None:
            hostvars = task_vars.get("hostvars", {})
            self._peers_seen = {}
            for host in sorted(task_vars.get("groups", {}).get("all", [])):
                raw = hostvars.raw_get(host) if isinstance(hostvars, HostVars) else hostvars.get(host, {})
                facts = raw.get("ansible_facts", {}) if isinstance(raw, dict) else {}
                self._peers_seen[host] = {
                    "ansible_host": to_text(hostvars[host].get("ansible_host", host)),
                    "address": (facts.get("default_ipv4") or {}).get("address"),
                    "addresses": host_addresses(facts),
                    "facts": dict((k, facts.get(k)) for k in FACTS),
                }
        return self._peers_seen

    def _inputs(self, role, task_vars):
        code, names = _role_code(role)
        merged = self._role_vars(role, task_vars)
        templar = self._templar.copy_with_new_env(available_variables=merged)
        produced = _produced_names()
        # A fact a module set during a run (getent's accounts, service_facts' units) is what the host
        # is, not what the role is asked to make of it: its value depends on when the run read it
        # and on what the fact cache kept. The host's state is the drift check's; FACTS, its size.
        facts = task_vars.get("ansible_facts") or {}
        inputs = {"code": code[:16], "groups": _fingerprint(_inventory_groups(task_vars)),
                  "group_names": _fingerprint([g for g in task_vars.get("group_names", []) if g not in RUN_GROUPS]),
                  "hosts": _fingerprint(self._peers(task_vars))}
        own = {}
        for name in _role_closure(role):
            own.update(self._role_files(name, "defaults"))
        for name in _role_closure(role):
            own.update(self._role_files(name, "vars"))
        for name in sorted(names):
            if name not in merged or name in NOT_INPUTS or name in produced:
                continue
            # A private name is an input only as a value the roles derive in their own files;
            # otherwise it is something a task set (a registered result, a secret read into a fact).
            if name.startswith("__") and name not in own:
                continue
            # A value that depends on which hosts this run targets (--limit, a replacement's run)
            # is not an input of what the role leaves on a host.
            if RUN_SCOPED.search(to_text(merged[name], errors="replace")):
                continue
            if LOCAL_FACTS.search(to_text(merged[name], errors="replace")):
                continue
            if name in facts:
                continue
            if name.startswith("ansible_") and name not in ("ansible_host", "ansible_port", "ansible_user"):
                continue
            if name in own and _stands_for_itself(merged[name], own[name]):
                continue
            inputs[name] = _fingerprint(self._template(templar, merged[name]))
        if "__%s_applied" % role not in merged:
            return inputs, None
        try:
            # Plain data from here on: the registered result is templated again by the record task.
            declared = json.loads(json.dumps(templar.template(merged["__%s_applied" % role]) or {}))
        except Exception as err:  # pylint: disable=broad-except
            raise AnsibleError("applied_state: cannot resolve __%s_applied: %s" % (role, to_text(err))) from err
        if not isinstance(declared, dict) or set(declared) - {"files", "units", "packages", "probes", "needs"}:
            raise AnsibleError("applied_state: __%s_applied must be a dict of files, units, packages, probes and needs,"
                               " got: %r" % (role, declared))
        return inputs, declared

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = dict(task_vars or {})
        task_vars["hostvars"] = _hostvars_read_once(task_vars.get("hostvars"))
        self._peers_seen = None
        path = self._task.args.get("path", "/var/lib/sparkfleet/applied")
        record = self._task.args.get("record")
        if record is not None:
            return self._record(result, record, path, task_vars)
        if self._task.args.get("sources"):
            return dict(result, changed=False, sources=self._sources(task_vars))
        if self._task.args.get("scan"):
            return self._scan(result, self._task.args["scan"], path, task_vars)
        if self._task.args.get("mark"):
            return self._mark(result, self._task.args["mark"], path, task_vars)
        roles = self._task.args.get("roles") or []
        if not isinstance(roles, list):
            raise AnsibleError("applied_state: roles must be a list of role names")
        unknown = [r for r in roles if not os.path.isdir(os.path.join(ROLES, r))]
        if unknown:
            raise AnsibleError("applied_state: no such role in the collection: %s" % ", ".join(unknown))
        earlier = task_vars.get("__sparkfleet_applied")
        read = dict(earlier.get("read", {})) if isinstance(earlier, dict) else {}
        preflight = bool(task_vars.get("sparkfleet_preflight"))
        reuse = {} if preflight or os.path.exists(_applied_marker()) else read
        wanted, undeclared = {}, []
        for role in roles:
            if role in reuse:
                wanted[role] = reuse[role]
                continue
            inputs, declared = self._inputs(role, task_vars)
            if declared is None:
                undeclared.append(role)
            else:
                wanted[role] = dict(declared, inputs=inputs)
        result["roles"] = wanted
        # Every role a gate of this run looked at on this host: what the run's record (mark) lists.
        gated = list(earlier.get("gated", [])) if isinstance(earlier, dict) else []
        result["gated"] = gated + [r for r in roles if r not in gated]
        # What the preflight read, for the main pass of the same play; a main pass uses it once.
        result["read"] = (dict(read, **wanted) if preflight
                          else dict((r, v) for r, v in read.items() if r not in roles))
        if not boolean(self._templar.template(task_vars.get("sparkfleet_skip_unchanged", True)), strict=False):
            return self._answer(result, task_vars, list(roles),
                                dict((r, ["sparkfleet_skip_unchanged is false"]) for r in roles))
        answer = {"due": [], "reasons": {}}
        if wanted:
            # The preflight pass looks at the records only: drift alone does not call for the checks.
            answer = self._execute_module(module_name="sparkfleet.cluster.applied_state",
                                          module_args=dict(state="check", path=path, roles=wanted,
                                                           drift=not task_vars.get("sparkfleet_preflight")),
                                          task_vars=task_vars)
        if answer.get("failed"):
            return dict(result, **answer)
        # A role that declares nothing to check runs every time: its drift could not be seen.
        due = answer["due"] + undeclared
        reasons = dict(answer["reasons"], **dict((r, ["it declares no state to check"]) for r in undeclared))
        if task_vars.get("sparkfleet_preflight"):
            # The checks read inputs only: drift alone does not call for them again.
            reasons = dict((r, [x for x in reasons[r] if x.startswith(("no record", "inputs changed", "it declares"))])
                           for r in due)
            due = [r for r in due if reasons[r]]
        # A due role's needs (the roles whose published facts it reads, earlier in this play) are
        # due with it, so that what it reads is this run's.
        for role in reversed(roles):
            if role in due:
                for need in (wanted.get(role) or {}).get("needs", []):
                    if need not in due:
                        due.append(need)
                        reasons[need] = ["%s needs it" % role]
        return self._answer(result, task_vars, [r for r in roles if r in due], reasons)

    @staticmethod
    def _answer(result, task_vars, due, reasons):
        """due and its reasons, and which of them this play checks: those no earlier play of this
        run checked on this host. The preflight pass checks them and applies nothing."""
        earlier = task_vars.get("__sparkfleet_applied")
        checked = list(earlier.get("checked", [])) if isinstance(earlier, dict) else []
        check = [r for r in due if r not in checked]
        result.update(changed=False, check=check, checked=checked + check, reasons=dict((r, reasons[r]) for r in due),
                      due=[] if task_vars.get("sparkfleet_preflight") else due)
        if due and not task_vars.get("sparkfleet_preflight"):
            with open(_applied_marker(), "a", encoding="utf-8"):
                pass
        return result

    def _why_not_record(self, task_vars):
        if task_vars.get("sparkfleet_preflight"):
            return "the preflight pass applies nothing"
        if self._task.check_mode:
            return "check mode applies nothing"
        if list(task_vars.get("ansible_run_tags", ["all"])) != ["all"] or task_vars.get("ansible_skip_tags"):
            return "a run limited by tags may not have applied a role whole"
        return None

    def _sources(self, task_vars):
        """The fingerprint of what every role's inputs come from, for every host of the inventory:
        the collection's code, the groups, each host's variables as the inventory and the extra
        variables give them (untemplated, but for those that call a lookup), its addresses and
        size as the gate's inputs see them, the other facts the code names, and the environment
        variables the code's lookups read."""
        code, named_facts, env = _collection_code()
        hostvars = task_vars.get("hostvars", {})
        groups = task_vars.get("groups", {})
        produced = _produced_names()
        peers = self._peers(task_vars)
        hosts = {}
        for host in sorted(groups.get("all", [])):
            raw = hostvars.raw_get(host) if isinstance(hostvars, HostVars) else hostvars.get(host, {})
            facts = raw.get("ansible_facts", {}) or {}
            variables = {}
            for name, value in raw.items():
                if (name in NOT_INPUTS or name in produced or name in facts or name in ("omit", "module_setup")
                        or name.startswith("ansible_") and name not in ("ansible_host", "ansible_port", "ansible_user")):
                    continue
                if "lookup(" in to_text(value, errors="replace"):
                    value = self._template(self._templar.copy_with_new_env(available_variables=raw), value)
                variables[name] = value
            hosts[host] = {"vars": variables, "peer": peers.get(host),
                           "facts": dict((k, facts.get(k)) for k in sorted(named_facts) if k in facts)}
        return _fingerprint({
            "code": code,
            "groups": _inventory_groups(task_vars),
            "hosts": hosts,
            "env": dict((name, os.environ.get(name)) for name in sorted(env)),
        })

    def _scan(self, result, sources, path, task_vars):
        """Whether the host is as the last whole run left it; if so, it joins sparkfleet_unchanged."""
        if not boolean(self._templar.template(task_vars.get("sparkfleet_skip_unchanged", True)), strict=False):
            return dict(result, changed=False, unchanged=False, reasons=["sparkfleet_skip_unchanged is false"])
        # The interpreter the host's modules run with: set, or found by an earlier run's discovery.
        python = self._templar.template(task_vars.get("ansible_python_interpreter") or "auto")
        if python.startswith("auto"):
            python = task_vars.get("ansible_facts", {}).get("discovered_interpreter_python") or "/usr/bin/python3"
        command, script = _scan_command(python, path, sources)
        answer = self._low_level_execute_command(command, in_data=script, sudoable=True)
        reasons = _scan_reasons(answer["rc"], answer["stdout"], answer["stderr"], python)
        result.update(changed=False, unchanged=not reasons, reasons=reasons[:host_side.MAX_REASONS])
        if not reasons:
            result.update(add_group=UNCHANGED_GROUP, parent_groups=["all"])
        return result

    def _mark(self, result, sources, path, task_vars):
        """The record of a run that went through every layer on this host: its sources and the
        roles its gates looked at."""
        applied = task_vars.get("__sparkfleet_applied")
        why = self._why_not_record(task_vars) or (None if isinstance(applied, dict) and applied.get("gated")
                                                  else "no layer's gate ran on this host")
        if why:
            return dict(result, changed=False, marked=[], msg=why)
        answer = self._execute_module(module_name="sparkfleet.cluster.applied_state",
                                      module_args=dict(state="mark", path=path, sources=sources,
                                                       roles=dict((r, True) for r in applied["gated"])),
                                      task_vars=task_vars)
        return dict(result, **answer)

    def _record(self, result, record, path, task_vars):
        why = self._why_not_record(task_vars)
        if why or not record.get("due"):
            result.update(changed=False, recorded=[], msg=why or "no role was due")
            return result
        roles = dict((r, record["roles"][r]) for r in record["due"] if r in record["roles"])
        answer = self._execute_module(module_name="sparkfleet.cluster.applied_state",
                                      module_args=dict(state="record", path=path, roles=roles), task_vars=task_vars)
        return dict(result, **answer)
