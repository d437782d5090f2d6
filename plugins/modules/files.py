#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: sparkfleet contributors
# Apache License 2.0

from __future__ import annotations

DOCUMENTATION = r"""
module: files
short_description: A role's directories, files, links and removals on a host, in one call
version_added: 0.1.0
description:
  - Puts every entry of O(files) in the state it asks for, in one module call on the host (a directory, a file
    with the given content, a symbolic link, or nothing at all). Each entry's owner, group and mode are set where
    they differ.
  - The role's files in one task instead of a C(file), C(copy) or C(template) task each, and one call on the
    host instead of two per file (Ansible's C(template) and C(copy) ask for the file's checksum in one module
    call and write or set its attributes in a second).
  - Used through its action plugin, which renders an entry's O(files[].template) and reads its
    O(files[].src) on the controller, from the role's C(templates/) and C(files/) directories as
    C(ansible.builtin.template) and C(ansible.builtin.copy) find them. Text files only; binaries
    (jars, archives) go through C(ansible.builtin.copy).
  - Entries are applied in their order (a directory before the files in it). The first entry that fails stops
    the call; the entries before it stay applied.
  - Run it with C(no_log) when a file's content is a secret.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
attributes:
  action:
    support: full
  async:
    support: none
  bypass_host_loop:
    support: none
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  files:
    description:
      - The entries, applied in this order.
    type: list
    elements: dict
    required: true
    suboptions:
      path:
        description:
          - The entry's absolute path on the host.
        type: path
        required: true
      state:
        description:
          - V(file) writes O(files[].content) (or what the action rendered), V(directory) creates the directory
            and its missing parents, V(link) points a symbolic link at O(files[].link), V(absent) removes the
            path (a directory with what it holds).
        type: str
        choices: [file, directory, link, absent]
        default: file
      content:
        description:
          - The file's text (written as UTF-8), with O(files[].state=file). The action plugin sets it from
            O(files[].template) or O(files[].src). Never logged (it may hold a secret).
        type: str
      template:
        description:
          - A Jinja template of the role (C(templates/)), rendered on the controller with the task's
            variables, as C(ansible.builtin.template) renders it. Action plugin only.
        type: str
      vars:
        description:
          - Variables for this entry's O(files[].template) only (as a loop's C(item) would be). Action plugin only.
        type: dict
      src:
        description:
          - A text file of the role (C(files/)) to write as the content. Action plugin only.
        type: str
      link:
        description:
          - The target of the symbolic link, with O(files[].state=link).
        type: str
      owner:
        description:
          - The owner, set where it differs.
        type: str
      group:
        description:
          - The group, set where it differs.
        type: str
      mode:
        description:
          - The mode, as a quoted octal string (V('0644')), set where it differs.
        type: raw
      backup:
        description:
          - Before a file is replaced, keep the previous one beside it (RV(results[].backup_file)), for a
            caller that puts it back when the new one is refused (the C(service) role's revert).
        type: bool
        default: false
      validate:
        description:
          - A command run on the new content before it replaces the file, C(%s) standing for a temporary file
            that holds it. A command that fails leaves the file as it was and fails the call.
        type: str
      force:
        description:
          - With O(files[].state=link), replace a file or an empty directory that stands where the link goes.
        type: bool
        default: false
seealso:
  - module: ansible.builtin.file
  - module: ansible.builtin.copy
  - module: ansible.builtin.template
author:
  - sparkfleet maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Spark | Write the configuration.
  sparkfleet.cluster.files:
    files:
      - {path: /etc/spark, state: directory, owner: root, group: spark, mode: "0750"}
      - {path: /etc/spark/spark-env.sh, template: spark-env.sh.j2, owner: root, group: spark, mode: "0640", backup: true}
      - {path: /etc/spark/log4j2.properties, src: log4j2.properties, mode: "0644"}
      - {path: /opt/spark/current, state: link, link: /opt/spark/spark-4.0.1}
      - {path: /etc/spark/old.conf, state: absent}
  register: spark_files

- name: Spark | Restart when a file changed.
  ansible.builtin.debug:
    msg: "{{ spark_files.results | selectattr('changed') | map(attribute='path') | list }}"
"""

RETURN = r"""
results:
  description: One item per entry, in the order given.
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description: The entry's path.
      type: str
    dest:
      description: The same path (the key C(ansible.builtin.template)'s result uses).
      type: str
    state:
      description: The state asked for.
      type: str
    changed:
      description: Whether the entry's content, link, presence or attributes changed.
      type: bool
    backup_file:
      description: Where the previous file was kept, when O(files[].backup) and it was replaced.
      type: str
      returned: when a file was replaced with O(files[].backup)
    owner:
      description: The owner now (absent for V(absent)).
      type: str
    group:
      description: The group now (absent for V(absent)).
      type: str
    mode:
      description: The mode now, in octal (absent for V(absent)).
      type: str
"""

import grp
import os
import pwd
import shutil
import stat
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_native

ENTRY = {
    "path": {"type": "path", "required": True},
    "state": {"type": "str", "default": "file", "choices": ["file", "directory", "link", "absent"]},
    "content": {"type": "str", "no_log": True},
    "template": {"type": "str"},
    "vars": {"type": "dict"},
    "src": {"type": "str"},
    "link": {"type": "str"},
    "owner": {"type": "str"},
    "group": {"type": "str"},
    "mode": {"type": "raw"},
    "backup": {"type": "bool", "default": False},
    "validate": {"type": "str"},
    "force": {"type": "bool", "default": False},
}


def _attributes(module, entry, changed):
    """Set the entry's owner, group and mode where they differ; whether that changed anything."""
    path = entry["path"]
    changed = module.set_owner_if_different(path, entry["owner"], changed, expand=False)
    changed = module.set_group_if_different(path, entry["group"], changed, expand=False)
    return module.set_mode_if_different(path, entry["mode"], changed, expand=False)


def _now(path):
    """The owner, group and mode the path has, for the caller (a revert copies them back)."""
    info = os.lstat(path)
    try:
        owner = pwd.getpwuid(info.st_uid).pw_name
    except KeyError:
        owner = str(info.st_uid)
    try:
        group = grp.getgrgid(info.st_gid).gr_name
    except KeyError:
        group = str(info.st_gid)
    return {"owner": owner, "group": group, "mode": "%04o" % stat.S_IMODE(info.st_mode)}


def _remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    else:
        os.unlink(path)


def _write(module, entry, result):
    """Write the file's content where it differs (validated, backed up, replaced atomically)."""
    path = entry["path"]
    wanted = to_bytes(entry["content"], errors="surrogate_or_strict")
    if os.path.lexists(path) and not os.path.isfile(path):
        module.fail_json(msg="files: %s is not a regular file; remove it first (state: absent)" % path,
                         results=result["done"])
    current = None
    if os.path.exists(path):
        with open(path, "rb") as handle:
            current = handle.read()
    if current == wanted:
        return False
    if module.check_mode:
        return True
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        module.fail_json(msg="files: the directory of %s does not exist (give it as an entry before it)" % path,
                         results=result["done"])
    handle, temporary = tempfile.mkstemp(prefix=".sparkfleet.", dir=directory)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(wanted)
        if entry["validate"]:
            if "%s" not in entry["validate"]:
                module.fail_json(msg="files: validate for %s must contain %%s" % path, results=result["done"])
            rc, out, err = module.run_command(entry["validate"] % temporary)
            if rc != 0:
                refusal = (err or out).strip()
                module.fail_json(msg="files: %s refused the new %s: %s" % (entry["validate"].split()[0], path, refusal),
                                 results=result["done"])
        if current is not None and entry["backup"]:
            entry["backup_file"] = module.backup_local(path)
        # A replaced file keeps its owner and mode (then set from the entry where given); a new one
        # gets the default mode less the umask, as copy and template give it.
        module.atomic_move(temporary, path, unsafe_writes=False)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    return True


def _apply(module, entry, result):
    """Put one entry in its state; whether that changed anything."""
    path, state = entry["path"], entry["state"]
    if not os.path.isabs(path):
        module.fail_json(msg="files: %s is not an absolute path" % path, results=result["done"])
    if state == "absent":
        if not os.path.lexists(path):
            return False
        if not module.check_mode:
            _remove(path)
        return True
    changed = False
    if state == "directory":
        if os.path.lexists(path) and not os.path.isdir(path):
            module.fail_json(msg="files: %s exists and is not a directory" % path, results=result["done"])
        if not os.path.isdir(path):
            changed = True
            if module.check_mode:
                return True
            os.makedirs(path)
    elif state == "link":
        if not entry["link"]:
            module.fail_json(msg="files: %s is a link: give its target as link" % path, results=result["done"])
        if not (os.path.islink(path) and os.readlink(path) == entry["link"]):
            if os.path.lexists(path) and not os.path.islink(path) and not entry["force"]:
                module.fail_json(msg="files: %s exists and is not a link (force: true replaces it)" % path,
                                 results=result["done"])
            changed = True
            if module.check_mode:
                return True
            if os.path.islink(path) or os.path.isfile(path):
                os.unlink(path)
            elif os.path.isdir(path):
                os.rmdir(path)  # only an empty one: force never removes what a directory holds
            os.symlink(entry["link"], path)
        # A link's owner and group are its own (lchown); its mode is its target's.
        changed = module.set_owner_if_different(path, entry["owner"], changed, expand=False)
        return module.set_group_if_different(path, entry["group"], changed, expand=False)
    else:
        if entry["content"] is None:
            module.fail_json(msg="files: %s: give its content (or a template or src through the action)" % path,
                             results=result["done"])
        changed = _write(module, entry, result)
        if module.check_mode and changed:
            return True  # nothing was written: no attributes to set
    return _attributes(module, entry, changed)


def main():
    module = AnsibleModule(
        argument_spec={"files": {"type": "list", "elements": "dict", "required": True, "options": ENTRY}},
        supports_check_mode=True,
    )
    result = {"changed": False, "done": []}
    for entry in module.params["files"]:
        try:
            changed = _apply(module, entry, result)
        except (OSError, IOError) as err:
            module.fail_json(msg="files: %s: %s" % (entry["path"], to_native(err)), results=result["done"])
        item = {"path": entry["path"], "dest": entry["path"], "state": entry["state"], "changed": changed}
        if entry.get("backup_file"):
            item["backup_file"] = entry["backup_file"]
        if entry["state"] != "absent" and os.path.lexists(entry["path"]):
            item.update(_now(entry["path"]))
        result["done"].append(item)
        result["changed"] = result["changed"] or changed
    module.exit_json(changed=result["changed"], results=result["done"])


if __name__ == "__main__":
    main()
