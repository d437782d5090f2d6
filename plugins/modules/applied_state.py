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
      - V(mark) writes the record of a run that went through every layer (O(sources) and each role's
        record as the run left it). The action's scan, which compares a host with it, runs the
        collection's C(applied_state) module utilities with a plain interpreter, not this module.
    type: str
    choices: [check, record, mark]
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
      - With V(mark), the fingerprint of everything the roles' inputs come from
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
  description: Per due role, why (the first few differences). From the action's scan, a list.
  type: raw
  returned: always
unchanged:
  description: Returned by the action's scan only. Whether the host is as the last whole run left it.
  type: bool
  returned: when the action scans
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

import json
import os
import tempfile
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sparkfleet.cluster.plugins.module_utils.applied_state import (
    MAX_REASONS, RUN, digest, drift, expand, files_state, probes_state, read, record_path)


def _check(module, directory, role, want, drift_too=True):
    record = read(directory, role)
    if record is None:
        return ["no record of an earlier run"]
    reasons = []
    inputs, recorded = want.get("inputs", {}), record.get("inputs", {})
    changed = sorted(name for name in set(inputs) | set(recorded) if inputs.get(name) != recorded.get(name))
    if changed:
        reasons.append("inputs changed: %s" % ", ".join(changed[:10]))
    if not drift_too:
        return reasons
    if sorted(json.dumps(p) for p in want.get("probes", [])) != sorted(record.get("probes", {})):
        reasons.append("its probes changed")
    reasons.extend(drift(record, want.get("units", []), want.get("packages", [])))
    if (not reasons and not module.check_mode
            and [record.get("units"), record.get("packages")] != [want.get("units", []), want.get("packages", [])]):
        # A record written before records named their units and packages: the role is as declared
        # (not due), so they are the ones it applied; the run's scan needs them. Check mode writes nothing.
        record.update(units=want.get("units", []), packages=want.get("packages", []))
        _save(directory, role, record)
    return reasons


def _save(directory, name, content):
    os.makedirs(directory, mode=0o700, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=directory, prefix=".%s." % name)
    with os.fdopen(handle, "w") as out:
        json.dump(content, out, sort_keys=True, indent=1)
    os.chmod(tmp, 0o600)
    os.replace(tmp, record_path(directory, name))


def _write(directory, role, want):
    files, signatures = files_state(expand(want.get("files", [])))
    # File times move in clock ticks of some milliseconds: a file changed in the last seconds could
    # change again within the same tick unseen. Those are read again on the next check.
    settled = time.time_ns() - 2 * 10**9
    signatures = dict((path, value) for path, value in signatures.items() if value[2] < settled)
    _save(directory, role, {
        "inputs": want.get("inputs", {}),
        "files": files,
        "signatures": signatures,
        "probes": probes_state(want.get("probes", [])),
        "units": want.get("units", []),
        "packages": want.get("packages", []),
    })


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["check", "record", "mark"], default="check"),
            path=dict(type="path", default="/var/lib/sparkfleet/applied"),
            roles=dict(type="dict"),
            sources=dict(type="str"),
            drift=dict(type="bool", default=True),
        ),
        required_if=[("state", "check", ["roles"]), ("state", "record", ["roles"]),
                     ("state", "mark", ["sources", "roles"])],
        supports_check_mode=True,
    )
    directory, roles, state = module.params["path"], module.params["roles"], module.params["state"]
    if state == "mark":
        if not module.check_mode:
            _save(directory, RUN, {"sources": module.params["sources"],
                                   "roles": dict((role, digest(directory, role)) for role in sorted(roles))})
        module.exit_json(changed=False, marked=sorted(roles))
    if state == "record":
        if not module.check_mode:
            for role, want in roles.items():
                _write(directory, role, want)
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
