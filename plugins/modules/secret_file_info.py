#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: sparkfleet contributors
# Apache License 2.0

from __future__ import annotations

DOCUMENTATION = r"""
module: secret_file_info
short_description: Read a kept secret with its file's and directory's owner and mode, in one call
version_added: 0.1.0
description:
  - Reads the copy of a cluster secret that a holder keeps for the C(sparkfleet.cluster.secrets) role and, in the
    same call, the owner, group and mode of the file and of its
    directory. The role compares them with what it wants (the value; root, C(0600) in a root C(0700) directory) and
    writes only what differs, so a run that changes nothing costs one module call per holder and secret.
  - 'A missing file (or directory) is not an error: RV(exists) is V(false).'
  - Changes nothing. Run it with C(no_log), as the content is the secret.
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
  path:
    description:
      - The secret's file on the holder.
    type: path
    required: true
seealso:
  - module: ansible.builtin.slurp
  - module: ansible.builtin.stat
author:
  - sparkfleet maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Read the holder's copy of the Spark secret
  sparkfleet.cluster.secret_file_info:
    path: /etc/sparkfleet/secrets/spark_auth_secret
  become: true
  register: kept
  no_log: true

- name: The copy is the value, root-owned and 0600
  ansible.builtin.assert:
    that:
      - kept.exists
      - kept.content | b64decode == wanted
      - kept.mode == '0600' and kept.uid == 0
  no_log: true
"""

RETURN = r"""
exists:
  description: Whether the file exists (and is a regular file).
  returned: always
  type: bool
content:
  description: The file's content, base64-encoded (decode it with C(b64decode)).
  returned: when RV(exists)
  type: str
mode:
  description: The file's permission bits, as four octal digits.
  returned: when RV(exists)
  type: str
  sample: "0600"
uid:
  description: The file's owner.
  returned: when RV(exists)
  type: int
gid:
  description: The file's group.
  returned: when RV(exists)
  type: int
dir_exists:
  description: Whether the file's directory exists.
  returned: always
  type: bool
dir_mode:
  description: The directory's permission bits, as four octal digits.
  returned: when RV(dir_exists)
  type: str
  sample: "0700"
dir_uid:
  description: The directory's owner.
  returned: when RV(dir_exists)
  type: int
dir_gid:
  description: The directory's group.
  returned: when RV(dir_exists)
  type: int
"""

import base64
import os
import stat

from ansible.module_utils.basic import AnsibleModule


def _owner_and_mode(st, prefix=""):
    """The owner, group and permission bits of an os.stat result, as the module returns them."""
    return {prefix + "mode": "%04o" % stat.S_IMODE(st.st_mode), prefix + "uid": st.st_uid, prefix + "gid": st.st_gid}


def _stat(path):
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None


def read_secret_file(path):
    """The module's result for path (no side effects)."""
    result = {"changed": False, "exists": False, "dir_exists": False}
    directory = _stat(os.path.dirname(path) or ".")
    if directory is not None and stat.S_ISDIR(directory.st_mode):
        result.update(_owner_and_mode(directory, "dir_"), dir_exists=True)
    secret = _stat(path)
    if secret is not None and stat.S_ISREG(secret.st_mode):
        with open(path, "rb") as handle:
            content = handle.read()
        result.update(_owner_and_mode(secret), exists=True, content=base64.b64encode(content).decode("ascii"))
    return result


def main():
    module = AnsibleModule(
        argument_spec=dict(path=dict(type="path", required=True)),
        supports_check_mode=True,
    )
    try:
        result = read_secret_file(module.params["path"])
    except OSError as exc:
        module.fail_json(msg="Cannot read %s: %s" % (module.params["path"], exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
