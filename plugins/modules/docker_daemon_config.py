#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: sparkfleet contributors
# Apache License 2.0

from __future__ import annotations

DOCUMENTATION = r"""
module: docker_daemon_config
short_description: Merge settings into dockerd's daemon.json, keeping everyone else's
version_added: 0.1.0
description:
  - Deep-merge O(settings) into Docker's C(daemon.json) and delete O(remove_keys), keeping every other key,
    whoever set it (another role, an administrator). This is the one mechanism through which the roles of
    this collection (Docker, the NVIDIA container toolkit) change that file, so that none overwrites another's keys.
  - 'Merging: a key of O(settings) whose value and the file''s value are both objects is merged key by key,
    recursively (so a role adding C(runtimes.nvidia) keeps the other C(runtimes)); any other value (a list,
    a string, a number, V(null)) replaces the file''s value. Lists are replaced, not appended to, so a list
    such as C(node-generic-resources) is always exactly what the role computed.'
  - The file is compared as parsed JSON, not as text. It is written (atomically, mode C(0644), formatted with an
    indent of 2 and the keys in their existing order) only when the result differs, so a second run changes
    nothing, and a file that only differs in formatting is left alone.
  - A missing or empty file is an empty object. A file that is not a JSON object is refused, with the parser's
    message, and left as it is.
  - Restarting dockerd so that it reads the file is up to the caller. With O(backup=true) the result has what the
    C(copy) and C(template) modules return for a backup (C(dest), C(backup_file)), so it can be given to the
    service role's C(service_revert_files), which puts the previous file back when dockerd does not come back
    with the new one.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  platform:
    platforms: posix
options:
  path:
    description:
      - The daemon.json to change. Its directory is created (mode C(0755)) when missing.
    type: path
    default: /etc/docker/daemon.json
  settings:
    description:
      - Settings to merge into the file (see the description for how).
      - Keys are daemon.json's own, for example C(default-runtime), C(runtimes), C(log-opts),
        C(node-generic-resources).
    type: dict
    default: {}
  remove_keys:
    description:
      - Keys to delete, top-level (C(default-runtime)) or dotted for nested ones (C(runtimes.nvidia)).
        A string that is itself a top-level key of the file (a key containing a dot) is that key.
      - Keys that are not there are ignored. A key may not be both removed and set in O(settings).
    type: list
    elements: str
    default: []
  backup:
    description:
      - Keep a copy of the file, with a timestamp in its name, before changing it (returned as RV(backup_file)).
        The caller removes it when it is no longer needed.
    type: bool
    default: false
notes:
  - dockerd refuses to start when a directive is both in daemon.json and on its command line (for example
    C(node-generic-resources) and C(--node-generic-resource), or C(hosts) and C(-H)); do not also set them in
    the systemd unit.
seealso:
  - plugin: sparkfleet.cluster.gpu_generic_resources
    plugin_type: filter
author:
  - sparkfleet maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: The NVIDIA runtime, default for every container (Swarm services cannot choose a runtime)
  sparkfleet.cluster.docker_daemon_config:
    settings:
      default-runtime: nvidia
      runtimes:
        nvidia:
          path: nvidia-container-runtime
          runtimeArgs: []
  notify: Restart docker

- name: Logging limits, set by the Docker role; the NVIDIA keys above are kept
  sparkfleet.cluster.docker_daemon_config:
    settings:
      log-driver: json-file
      log-opts:
        max-size: 50m
        max-file: "3"
    backup: true
  register: daemon_json

- name: Restart dockerd when the file changed; put the previous one back if it does not come back
  ansible.builtin.include_role:
    name: sparkfleet.cluster.service
  vars:
    service_units: [{name: docker, wanted: true, packaged: true}]
    service_restart: "{{ ['docker'] if daemon_json is changed else [] }}"
    service_revert_files: ["{{ daemon_json }}"]

- name: Stop using the NVIDIA runtime
  sparkfleet.cluster.docker_daemon_config:
    remove_keys:
      - default-runtime
      - runtimes.nvidia
      - node-generic-resources
  notify: Restart docker
"""

RETURN = r"""
config:
  description: The merged content of the file (what it holds after the task, or would hold in check mode).
  returned: success
  type: dict
  sample: {"default-runtime": "nvidia", "log-driver": "json-file", "runtimes": {"nvidia": {"path": "nvidia-container-runtime", "runtimeArgs": []}}}
path:
  description: The file.
  returned: always
  type: str
  sample: /etc/docker/daemon.json
dest:
  description: The file, under the name the C(copy) and C(template) modules give it.
  returned: always
  type: str
  sample: /etc/docker/daemon.json
backup_file:
  description: The copy made before the change, when O(backup=true) and the file existed and changed.
  returned: changed and O(backup=true)
  type: str
  sample: /etc/docker/daemon.json.12345.2024-03-13@09:41:07~
"""

import copy
import json
import os
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native


class InvalidConfig(Exception):
    pass


def load_config(text, path):
    """The parsed file; ``{}`` for an empty one. InvalidConfig when it is not a JSON object."""
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InvalidConfig("%s is not valid JSON (%s); it was left as it is: fix or remove it" % (path, exc))
    if not isinstance(data, dict):
        raise InvalidConfig("%s holds a JSON %s, not an object; it was left as it is" % (path, type(data).__name__))
    return data


def deep_merge(base, settings):
    """``base`` with ``settings`` merged in: objects merged recursively, anything else replaced."""
    result = copy.deepcopy(base)
    for key, value in settings.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = deep_merge(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def key_paths(settings, prefix=""):
    """Every key of ``settings``, nested ones dotted (``runtimes``, ``runtimes.nvidia``, ...)."""
    for key, value in settings.items():
        path = prefix + key
        yield path
        if isinstance(value, dict):
            yield from key_paths(value, path + ".")


def remove_key(config, dotted):
    """Delete ``dotted`` from ``config`` in place; True when something was deleted."""
    if dotted in config:
        del config[dotted]
        return True
    parts = dotted.split(".")
    node = config
    for part in parts[:-1]:
        node = node.get(part) if isinstance(node, dict) else None
        if node is None:
            return False
    if isinstance(node, dict) and parts[-1] in node:
        del node[parts[-1]]
        return True
    return False


def render(config):
    return json.dumps(config, indent=2) + "\n"


def same_config(a, b):
    """Equal as JSON: key order does not matter, but types do (Python has True == 1)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def merged_config(current, settings, remove_keys):
    conflicts = sorted(set(remove_keys) & set(key_paths(settings)))
    if conflicts:
        raise InvalidConfig("keys both set and removed: %s" % ", ".join(conflicts))
    result = deep_merge(current, settings)
    for key in remove_keys:
        remove_key(result, key)
    return result


def _write(module, path, config):
    directory = os.path.dirname(path) or "."
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    fd, tmp = tempfile.mkstemp(prefix=".daemon.json.", dir=directory)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(render(config))
        os.chmod(tmp, 0o644)
        module.atomic_move(tmp, path, unsafe_writes=False, keep_dest_attrs=True)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    # atomic_move keeps an existing file's mode; daemon.json is 0644 whoever made it.
    module.set_mode_if_different(path, "0644", False)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", default="/etc/docker/daemon.json"),
            settings=dict(type="dict", default={}),
            remove_keys=dict(type="list", elements="str", default=[], no_log=False),
            backup=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    path = module.params["path"]
    result = dict(changed=False, path=path, dest=path)

    if os.path.isdir(path):
        module.fail_json(msg="%s is a directory" % path, **result)
    text = ""
    if os.path.exists(path):
        try:
            with open(path, "r") as handle:
                text = handle.read()
        except (IOError, OSError, UnicodeDecodeError) as exc:
            module.fail_json(msg="cannot read %s: %s" % (path, to_native(exc)), **result)
    try:
        current = load_config(text, path)
        config = merged_config(current, module.params["settings"] or {}, module.params["remove_keys"] or [])
    except InvalidConfig as exc:
        module.fail_json(msg=to_native(exc), **result)

    result["config"] = config
    if not same_config(config, current):
        result["changed"] = True
        if module._diff:
            result["diff"] = dict(before=render(current), after=render(config),
                                  before_header=path, after_header=path)
        if not module.check_mode:
            if module.params["backup"] and os.path.exists(path):
                result["backup_file"] = module.backup_local(path)
            try:
                _write(module, path, config)
            except (IOError, OSError) as exc:
                module.fail_json(msg="cannot write %s: %s" % (path, to_native(exc)), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
