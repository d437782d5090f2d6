#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: sparkfleet contributors
# Apache License 2.0
"""The host's side of the applied-state gate: read and write each role's record, and check the
host against it in one call. The action plugin of the same name (plugins/action/applied_state.py)
computes the roles' inputs on the controller and calls this module."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: applied_state
short_description: Check a host against what each role last applied there, or record it
description:
  - Called by the C(sparkfleet.cluster.applied_state) action, which computes each role's inputs
    on the controller; not meant to be called directly.
  - A record is one JSON file per role under O(path), readable by root only. It holds a hash of
    each input the role read (never the value), the checksum of each file the role declares, and
    the units, packages and probes it declares.
  - C(check) answers, per role, whether it is due and why; C(record) writes the records.
    Neither changes anything the cluster runs, so both report C(changed=false).
version_added: "1.1.0"
author:
  - sparkfleet maintainers (!UNKNOWN)
options:
  state:
    description:
      - V(check) compares, V(record) writes.
      - V(scan) answers whether the whole host is as the last run that went through every layer left it
        (O(sources) equal, each role's record as then, no drift); V(mark) writes that run's record.
    type: str
    choices: [check, record, scan, mark]
    default: check
  path:
    description: Where the records are kept.
    type: path
    default: /var/lib/sparkfleet/applied
  roles:
    description:
      - Per role name, C(inputs) (a dict of input name to hash) and the role's declared state
        (C(files), C(units), C(packages), C(probes)). With V(mark), the roles the run applied or
        found unchanged (any value).
    type: dict
  sources:
    description:
      - With V(scan) and V(mark), the fingerprint of everything the roles' inputs come from
        (the action computes it on the controller).
    type: str
  drift:
    description:
      - With V(false), C(check) compares the records and the inputs only, not the host's files, units,
        packages and probes (the preflight pass, where drift alone does not call for a role's checks).
    type: bool
    default: true
notes:
  - C(files) entries are paths or shell-style globs; a directory stands for the files under it.
    A file that did not exist when recorded must still not exist. A file is read again only when
    its size, modification time, change time or inode differ from the record's.
  - A unit must be active and enabled; a package installed (dpkg); a probe (a command run without
    a shell) must print what it printed when recorded.
  - The run record (C(run.json) under O(path)) holds O(sources) and a checksum of each role's record
    as the run left it; a role applied since by one layer's playbook alone no longer matches.
"""

EXAMPLES = r"""
- name: Find the roles due here
  sparkfleet.cluster.applied_state:
    roles: [java, spark]
  register: __applied
"""

RETURN = r"""
due:
  description: The roles to apply on this host (check).
  type: list
  elements: str
  returned: always
reasons:
  description: Per due role, why (the first few differences). With V(scan), a list.
  type: raw
  returned: always
unchanged:
  description: With V(scan), whether the host is as the last whole run left it.
  type: bool
  returned: when state is scan
check:
  description:
    - Returned by the action only. The due roles whose checks (their C(validate) entry point) the play
      runs before it applies any role, those no earlier play of this run checked on this host. In the
      preflight pass, the roles whose inputs changed (V(due) is then empty).
  type: list
  elements: str
  returned: always
checked:
  description: Returned by the action only. The roles checked on this host so far in this run, this play's included.
  type: list
  elements: str
  returned: always
"""

import glob
import hashlib
import json
import os
import tempfile
import time

from ansible.module_utils.basic import AnsibleModule

# Enough to say why; a role with many differences is due either way.
MAX_REASONS = 5
# The record of the last run that went through every layer (no role is named run).
RUN = "run"


def _sha1(path):
    digest = hashlib.sha1()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(65536), b""):
            digest.update(block)
    return digest.hexdigest()


def _expand(patterns):
    """Each declared path, glob or directory as the files it stands for. A pattern that matches
    nothing stays as itself, so that its absence is recorded and checked."""
    out = []
    for pattern in patterns:
        matches = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
        for match in matches or [pattern]:
            if os.path.isdir(match) and not os.path.islink(match):
                for root, dirs, names in os.walk(match):
                    dirs.sort()
                    out.extend(os.path.join(root, name) for name in sorted(names))
            else:
                out.append(match)
    return out


def _signature(path):
    """What changes whenever a file's content does: a write moves its change time, which no tool
    sets back (unlike the modification time)."""
    info = os.lstat(path)
    return [info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino]


def _files_state(paths, known=None):
    """Each file's checksum (or what stands in its place), and the signatures of the regular files.
    A file whose signature is the one in known (an earlier record) keeps its recorded checksum
    without being read: a no-op run reads no file's content (a Spark release is hundreds of MB)."""
    state, signatures = {}, {}
    known = known or {}
    for path in paths:
        try:
            if os.path.islink(path):
                state[path] = "link to %s" % os.readlink(path)
            elif os.path.isfile(path):
                signatures[path] = _signature(path)
                recorded = known.get(path)
                state[path] = recorded[0] if recorded and recorded[1] == signatures[path] else _sha1(path)
            else:
                state[path] = "absent" if not os.path.lexists(path) else "other"
        except OSError as err:
            state[path] = "unreadable: %s" % err.strerror
    return state, signatures


def _units_state(module, units):
    if not units:
        return {}
    systemctl = module.get_bin_path("systemctl")
    if not systemctl:
        return dict((unit, "no systemctl") for unit in units)
    _rc, out, _err = module.run_command(
        [systemctl, "show", "--property=Id,ActiveState,UnitFileState"] + ["%s.service" % u if "." not in u else u for u in units])
    state = {}
    # One block per unit, in the order asked, separated by blank lines.
    blocks = out.strip().split("\n\n")
    for unit, block in zip(units, blocks):
        props = dict(line.split("=", 1) for line in block.splitlines() if "=" in line)
        state[unit] = "%s/%s" % (props.get("ActiveState", "?"), props.get("UnitFileState", "?"))
    return state


def _units_bad(state):
    return ["unit %s is %s (wanted active/enabled)" % (unit, value)
            for unit, value in sorted(state.items()) if value not in ("active/enabled", "active/static", "active/generated")]


def _packages_missing(module, packages):
    """The packages not installed, a name another installed package provides counting as installed
    (a stand-in or a transitional package: apt installs it by that name too)."""
    if not packages:
        return []
    dpkg_query = module.get_bin_path("dpkg-query")
    if not dpkg_query:
        return []
    _rc, out, _err = module.run_command([dpkg_query, "-W", "-f=${db:Status-Abbrev}|${Package}|${Provides}\n"])
    installed = set()
    for line in out.splitlines():
        status, _sep, rest = line.partition("|")
        # The second letter is the state: installed (the first is what is wanted: install or hold).
        if status[1:2] == "i":
            name, _sep, provides = rest.partition("|")
            installed.add(name.split(":")[0])
            installed.update(p.strip().split(" ")[0] for p in provides.split(",") if p.strip())
    return [name for name in packages if name.split("=")[0] not in installed]


def _probes_state(module, probes):
    state = {}
    for probe in probes:
        rc, out, _err = module.run_command(probe)
        state[json.dumps(probe)] = hashlib.sha1(("%d\n%s" % (rc, out)).encode()).hexdigest()
    return state


def _record_path(directory, role):
    return os.path.join(directory, "%s.json" % role)


def _read(directory, role):
    try:
        with open(_record_path(directory, role)) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def _drift(module, record, units, packages):
    """What differs on the host from a role's record: its files and probes as recorded, the units
    and packages it declares."""
    signatures = record.get("signatures", {})
    known = dict((path, (value, signatures.get(path))) for path, value in record.get("files", {}).items())
    current, _signatures = _files_state(list(record.get("files", {})), known)
    reasons = ["file %s %s" % (path, "is gone" if current[path] == "absent" else "changed")
               for path, value in sorted(record.get("files", {}).items()) if current.get(path) != value]
    reasons.extend(_units_bad(_units_state(module, units)))
    reasons.extend("package %s is not installed" % name for name in _packages_missing(module, packages))
    probes = _probes_state(module, [json.loads(probe) for probe in sorted(record.get("probes", {}))])
    reasons.extend("probe %s answers otherwise" % " ".join(json.loads(probe))
                   for probe, value in sorted(probes.items()) if record["probes"][probe] != value)
    return reasons


def _check(module, directory, role, want, drift=True):
    record = _read(directory, role)
    if record is None:
        return ["no record of an earlier run"]
    reasons = []
    inputs, recorded = want.get("inputs", {}), record.get("inputs", {})
    changed = sorted(name for name in set(inputs) | set(recorded) if inputs.get(name) != recorded.get(name))
    if changed:
        reasons.append("inputs changed: %s" % ", ".join(changed[:10]))
    if not drift:
        return reasons
    if sorted(json.dumps(p) for p in want.get("probes", [])) != sorted(record.get("probes", {})):
        reasons.append("its probes changed")
    reasons.extend(_drift(module, record, want.get("units", []), want.get("packages", [])))
    if (not reasons and not module.check_mode
            and [record.get("units"), record.get("packages")] != [want.get("units", []), want.get("packages", [])]):
        # A record written before records named their units and packages: the role is as declared
        # (not due), so they are the ones it applied; the run's scan needs them. Check mode writes nothing.
        record.update(units=want.get("units", []), packages=want.get("packages", []))
        _save(directory, role, record)
    return reasons


def _scan(module, directory, sources):
    """Whether the host is as the last whole run left it: the same sources, each role's record
    as that run left it, and no drift in any of them (one systemctl and one dpkg call for all)."""
    run = _read(directory, RUN)
    if run is None:
        return ["no record of a run that went through every layer"]
    if run.get("sources") != sources:
        return ["what the roles' inputs come from changed since the last whole run"]
    reasons, units, packages = [], [], []
    for role, digest in sorted(run.get("roles", {}).items()):
        record = _read(directory, role)
        if record is None or digest is None or _digest(directory, role) != digest:
            reasons.append("%s was applied since the last whole run, or declares nothing to check" % role)
            continue
        units.extend(u for u in record.get("units", []) if u not in units)
        packages.extend(p for p in record.get("packages", []) if p not in packages)
        reasons.extend(_drift(module, record, [], []))
    reasons.extend(_units_bad(_units_state(module, units)))
    reasons.extend("package %s is not installed" % name for name in _packages_missing(module, packages))
    return reasons


def _digest(directory, role):
    try:
        with open(_record_path(directory, role), "rb") as handle:
            return hashlib.sha1(handle.read()).hexdigest()
    except OSError:
        return None


def _save(directory, name, content):
    os.makedirs(directory, mode=0o700, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=directory, prefix=".%s." % name)
    with os.fdopen(handle, "w") as out:
        json.dump(content, out, sort_keys=True, indent=1)
    os.chmod(tmp, 0o600)
    os.replace(tmp, _record_path(directory, name))


def _write(directory, role, want, module):
    files, signatures = _files_state(_expand(want.get("files", [])))
    # File times move in clock ticks of some milliseconds: a file changed in the last seconds could
    # change again within the same tick unseen. Those are read again on the next check.
    settled = time.time_ns() - 2 * 10**9
    signatures = dict((path, value) for path, value in signatures.items() if value[2] < settled)
    _save(directory, role, {
        "inputs": want.get("inputs", {}),
        "files": files,
        "signatures": signatures,
        "probes": _probes_state(module, want.get("probes", [])),
        "units": want.get("units", []),
        "packages": want.get("packages", []),
    })


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["check", "record", "scan", "mark"], default="check"),
            path=dict(type="path", default="/var/lib/sparkfleet/applied"),
            roles=dict(type="dict"),
            sources=dict(type="str"),
            drift=dict(type="bool", default=True),
        ),
        required_if=[("state", "check", ["roles"]), ("state", "record", ["roles"]),
                     ("state", "scan", ["sources"]), ("state", "mark", ["sources", "roles"])],
        supports_check_mode=True,
    )
    directory, roles, state = module.params["path"], module.params["roles"], module.params["state"]
    if state == "scan":
        reasons = _scan(module, directory, module.params["sources"])
        module.exit_json(changed=False, unchanged=not reasons, reasons=reasons[:MAX_REASONS])
    if state == "mark":
        if not module.check_mode:
            _save(directory, RUN, {"sources": module.params["sources"],
                                   "roles": dict((role, _digest(directory, role)) for role in sorted(roles))})
        module.exit_json(changed=False, marked=sorted(roles))
    if state == "record":
        if not module.check_mode:
            for role, want in roles.items():
                _write(directory, role, want, module)
        module.exit_json(changed=False, recorded=sorted(roles))
    due, reasons = [], {}
    for role, want in roles.items():
        found = _check(module, directory, role, want, module.params["drift"])
        if found:
            due.append(role)
            reasons[role] = found[:MAX_REASONS]
    module.exit_json(changed=False, due=due, reasons=reasons)


if __name__ == "__main__":
    main()
