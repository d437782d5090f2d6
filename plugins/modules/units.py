#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: sparkfleet contributors
# Apache License 2.0

from __future__ import annotations

DOCUMENTATION = r"""
module: units
short_description: A host's systemd units in the state wanted, in one call
version_added: 0.1.0
description:
  - Stops and disables the units of O(removed) and O(stopped) that are installed, deletes the unit files of
    O(removed) from O(path), reloads systemd when O(daemon_reload) is set or a file was deleted, then enables and
    starts each unit of O(started), in that order, in one module call on the host.
  - The C(service) role's step between writing the unit files and restarting what changed; where it took a
    C(find), a C(file) and a C(systemd_service) call per unit, this is one. A unit counts as enabled and as
    running as C(ansible.builtin.systemd_service) counts it (C(is-enabled) answers 0 other than C(indirect) or
    C(alias); the unit is C(active) or C(activating)).
  - The first unit that cannot be stopped or started fails the call, with the unit's last journal lines;
    what was done before it stays done.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  started:
    description:
      - Units to enable and start, in this order (a name with its suffix, V(spark-worker.service) or
        V(spark-cleanup.timer)). A unit already running is left running.
    type: list
    elements: str
    default: []
  stopped:
    description:
      - Units a package ships (names without the C(.service) suffix), to stop and disable where the unit is
        installed (in O(path), C(/usr/lib/systemd/system) or C(/lib/systemd/system)). Their files stay.
    type: list
    elements: str
    default: []
  removed:
    description:
      - Units this collection rendered (names without a suffix), to stop and disable, and whose
        C(.service) and C(.timer) files in O(path) are deleted.
    type: list
    elements: str
    default: []
  daemon_reload:
    description:
      - Reload systemd before the units start (their files were written just before this call).
    type: bool
    default: false
  path:
    description:
      - Where the rendered unit files are.
    type: path
    default: /etc/systemd/system
seealso:
  - module: ansible.builtin.systemd_service
  - module: sparkfleet.cluster.files
author:
  - sparkfleet maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Service | Stop the units no longer wanted, start and enable the wanted ones.
  sparkfleet.cluster.units:
    started: [spark-worker.service, spark-cleanup.timer]
    removed: [spark-history]
    stopped: [docker-registry]
    daemon_reload: "{{ unit_files is changed }}"
  register: units
"""

RETURN = r"""
started:
  description: The units of O(started) that were not running and were started (in check mode, would be).
  returned: always
  type: list
  elements: str
  sample: [spark-worker.service]
enabled:
  description: The units of O(started) that were enabled.
  returned: always
  type: list
  elements: str
stopped:
  description: The installed units of O(stopped) and O(removed) that were stopped or disabled.
  returned: always
  type: list
  elements: str
removed:
  description: The unit files deleted.
  returned: always
  type: list
  elements: str
  sample: [/etc/systemd/system/spark-history.service]
"""

import os

from ansible.module_utils.basic import AnsibleModule

PACKAGED_DIRS = ("/usr/lib/systemd/system", "/lib/systemd/system")


class Units:
    def __init__(self, module):
        self.module = module
        self.systemctl = module.get_bin_path("systemctl", required=True)
        self.result = {"changed": False, "started": [], "enabled": [], "stopped": [], "removed": []}

    def run(self, *args, check=True):
        rc, out, err = self.module.run_command([self.systemctl] + list(args))
        if check and rc != 0:
            self.fail("systemctl %s: %s" % (" ".join(args), (err or out).strip()), args[-1])
        return rc, out.strip()

    def fail(self, msg, unit):
        journal = self.module.get_bin_path("journalctl")
        if journal:
            lines = self.module.run_command([journal, "-q", "--no-pager", "-n", "15", "-u", unit])[1].rstrip()
            if lines:
                msg += "\nIts last journal lines:\n" + lines
        self.module.fail_json(msg=msg, **self.result)

    def running(self, unit):
        state = self.run("show", unit, "--property=ActiveState", "--value", check=False)[1]
        return state in ("active", "activating")

    def enabled(self, unit):
        rc, out = self.run("is-enabled", unit, check=False)
        return rc == 0 and out.splitlines() not in (["indirect"], ["alias"])

    def stop(self, unit):
        running, enabled = self.running(unit), self.enabled(unit)
        if not self.module.check_mode:
            if running:
                self.run("stop", unit)
            if enabled:
                self.run("disable", unit)
        if running or enabled:
            self.done("stopped", unit)

    def start(self, unit):
        for key, now, verb in (("enabled", self.enabled, "enable"), ("started", self.running, "start")):
            if not now(unit):
                if not self.module.check_mode:
                    self.run(verb, unit)
                self.done(key, unit)

    def done(self, key, what):
        self.result[key].append(what)
        self.result["changed"] = True


def main():
    module = AnsibleModule(
        argument_spec={
            "started": {"type": "list", "elements": "str", "default": []},
            "stopped": {"type": "list", "elements": "str", "default": []},
            "removed": {"type": "list", "elements": "str", "default": []},
            "daemon_reload": {"type": "bool", "default": False},
            "path": {"type": "path", "default": "/etc/systemd/system"},
        },
        supports_check_mode=True,
    )
    units = Units(module)
    here = module.params["path"]
    # A rendered unit's files are ours; a packaged one is wherever its package put it (or a mask in path).
    files = [os.path.join(here, name + suffix) for name in module.params["removed"] for suffix in (".service", ".timer")]
    files = [f for f in files if os.path.lexists(f)]
    packaged = [name + ".service" for name in module.params["stopped"]
                if any(os.path.lexists(os.path.join(d, name + ".service")) for d in (here,) + PACKAGED_DIRS)]
    # A timer first: stopped after its service, it could start the service again.
    for unit in sorted((os.path.basename(f) for f in files), key=lambda u: not u.endswith(".timer")) + packaged:
        units.stop(unit)
    for path in files:
        if not module.check_mode:
            os.unlink(path)
        units.done("removed", path)
    if (module.params["daemon_reload"] or files) and not module.check_mode:
        units.run("daemon-reload")
    for unit in module.params["started"]:
        units.start(unit)
    module.exit_json(**units.result)


if __name__ == "__main__":
    main()
