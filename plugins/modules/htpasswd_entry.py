#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: sparkfleet contributors
# Apache License 2.0

from __future__ import annotations

DOCUMENTATION = r"""
module: htpasswd_entry
short_description: The htpasswd line of one account (bcrypt or PBKDF2), keeping the file's hash while it matches
version_added: 0.1.0
description:
  - 'Returns the line C(<name>:<hash>) of O(name) with O(password): the one O(path) already holds for O(name)
    when its hash is a hash of O(password) in O(scheme) (for bcrypt, of cost O(cost)), else one with a new hash
    (a random salt). The same
    password therefore gives the same line on every run.'
  - 'Changes nothing. Write the line with C(ansible.builtin.copy) (with C(backup), so that the previous file can be
    put back, for example by the service role''s C(service_revert_files)); unlike C(community.general.htpasswd),
    which writes the file itself and keeps no copy.'
  - A missing O(path) holds no account. Run it with C(no_log), as the line checks the password.
requirements:
  - bcrypt (Debian's python3-bcrypt) on the host, for O(scheme=bcrypt)
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
      - The htpasswd file the line is meant for.
    type: path
    required: true
  name:
    description:
      - The account.
    type: str
    required: true
  password:
    description:
      - Its password.
    type: str
    required: true
  scheme:
    description:
      - C(bcrypt) (cost O(cost)), what the Prometheus exporters' web configuration, nginx and the registry read.
      - 'C(pbkdf2-sha256), C(pbkdf2-sha256$<iterations>$<salt>$<hash>) (base64, a 16-byte random salt), what
        sparkfleet''s GPU exporter reads: the standard library checks it, no bcrypt needed on the host.'
    type: str
    choices: [bcrypt, pbkdf2-sha256]
    default: bcrypt
  cost:
    description:
      - 'bcrypt''s work factor (4 to 31): each step doubles the time to check a password. A server that reads
        the file checks the hash on every request (nginx keeps no cache): at 12 that is about 0.2 s of CPU
        per request. A lower cost suits a long random secret, which cannot be guessed however cheap each
        try is; a person''s password wants 12 or more.'
    type: int
    default: 12
seealso:
  - module: community.general.htpasswd
author:
  - sparkfleet maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: The registry's account (bcrypt, the only scheme the registry's htpasswd backend reads)
  sparkfleet.cluster.htpasswd_entry:
    path: /etc/docker/registry/htpasswd
    name: sparkfleet
    password: "{{ registry_password }}"
  register: entry
  no_log: true

- name: Write it, keeping the previous file until the registry answers
  ansible.builtin.copy:
    content: "{{ entry.line }}\n"
    dest: /etc/docker/registry/htpasswd
    mode: "0640"
    backup: true
  no_log: true

- name: The GPU exporter's scrape account (PBKDF2, which its standard library checks)
  sparkfleet.cluster.htpasswd_entry:
    path: /opt/sparkfleet/gpu-exporter/scrape.passwd
    name: prometheus
    password: "{{ scrape_password }}"
    scheme: pbkdf2-sha256
  register: entry
  no_log: true
"""

RETURN = r"""
line:
  description: C(<name>:<hash>), without a newline.
  returned: success
  type: str
  sample: "sparkfleet:$2b$12$0Q9Xy8bK0Vq3iQy5Jf6r9e0q3L1m4X5yYk3t9m3b2c1a0Zx9w8v7u"
kept:
  description: Whether the hash is the one O(path) already held (it matches O(password)).
  returned: success
  type: bool
"""

import base64
import hashlib
import hmac
import os

from ansible.module_utils.basic import AnsibleModule, missing_required_lib
from ansible.module_utils.common.text.converters import to_bytes, to_native, to_text

try:
    import bcrypt
    HAS_BCRYPT = True
except ImportError:
    bcrypt = None
    HAS_BCRYPT = False

BCRYPT_PREFIXES = ("$2a$", "$2b$", "$2y$")
PBKDF2_PREFIX = "pbkdf2-sha256$"
# The exporters' passwords are cluster secrets of 64 random characters: the hash's cost guards
# little there, and it is paid at every scrape.
PBKDF2_ITERATIONS = 100000


def current_hash(text, name):
    """The hash ``text`` (an htpasswd file) holds for ``name``; None when it holds none."""
    for line in text.splitlines():
        user, sep, hashed = line.partition(":")
        if sep and user == name:
            return hashed.strip()
    return None


class Pbkdf2:
    """``pbkdf2-sha256$<iterations>$<salt b64>$<hash b64>`` with bcrypt's calls (the standard library's PBKDF2)."""

    @staticmethod
    def hashpw(password, salt=None, iterations=PBKDF2_ITERATIONS):
        salt = os.urandom(16) if salt is None else salt
        digest = hashlib.pbkdf2_hmac("sha256", password, salt, iterations)
        return "%s%d$%s$%s" % (PBKDF2_PREFIX, iterations, to_text(base64.b64encode(salt)), to_text(base64.b64encode(digest)))

    @staticmethod
    def checkpw(password, hashed):
        """Whether ``hashed`` is a hash of ``password``; ValueError when it is malformed."""
        try:
            iterations, salt, digest = to_text(hashed)[len(PBKDF2_PREFIX):].split("$")
            expected = base64.b64decode(digest, validate=True)
            actual = hashlib.pbkdf2_hmac("sha256", password, base64.b64decode(salt, validate=True), int(iterations))
        except (TypeError, ValueError) as exc:
            raise ValueError("malformed pbkdf2-sha256 hash: %s" % exc)
        return hmac.compare_digest(expected, actual)


def pbkdf2_entry(name, password, existing):
    """(line, kept) of scheme pbkdf2-sha256: ``existing`` when it is a hash of ``password``, else a new hash."""
    secret = to_bytes(password)
    if existing and existing.startswith(PBKDF2_PREFIX):
        try:
            if Pbkdf2.checkpw(secret, existing):
                return "%s:%s" % (name, existing), True
        except ValueError:
            pass  # a damaged hash: replaced below
    return "%s:%s" % (name, Pbkdf2.hashpw(secret)), False


def entry(name, password, existing, hasher, cost=12):
    """(line, kept): ``existing`` when it is a bcrypt hash of ``password`` of that cost, else a new hash."""
    secret = to_bytes(password)
    # $2b$<cost, two digits>$<salt and hash>
    if existing and existing.startswith(BCRYPT_PREFIXES) and existing[4:7] == "%02d$" % cost:
        try:
            if hasher.checkpw(secret, to_bytes(existing)):
                return "%s:%s" % (name, existing), True
        except ValueError:
            pass  # a damaged hash: replaced below
    return "%s:%s" % (name, to_text(hasher.hashpw(secret, hasher.gensalt(cost)))), False


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            name=dict(type="str", required=True),
            password=dict(type="str", required=True, no_log=True),
            scheme=dict(type="str", default="bcrypt", choices=["bcrypt", "pbkdf2-sha256"]),
            cost=dict(type="int", default=12),
        ),
        supports_check_mode=True,
    )
    scheme = module.params["scheme"]
    if not 4 <= module.params["cost"] <= 31:
        module.fail_json(msg="cost is bcrypt's work factor, 4 to 31: %r" % module.params["cost"])
    if scheme == "bcrypt" and not HAS_BCRYPT:
        module.fail_json(msg=missing_required_lib("bcrypt (Debian's python3-bcrypt)"))
    path, name = module.params["path"], module.params["name"]
    if ":" in name or "\n" in name:
        module.fail_json(msg="an htpasswd account name holds no ':' nor newline: %r" % name)
    text = ""
    if os.path.exists(path):
        try:
            with open(path, "r") as handle:
                text = handle.read()
        except (IOError, OSError, UnicodeDecodeError) as exc:
            module.fail_json(msg="cannot read %s: %s" % (path, to_native(exc)))
    if scheme == "pbkdf2-sha256":
        line, kept = pbkdf2_entry(name, module.params["password"], current_hash(text, name))
    else:
        line, kept = entry(name, module.params["password"], current_hash(text, name), bcrypt, module.params["cost"])
    module.exit_json(changed=False, line=line, kept=kept)


if __name__ == "__main__":
    main()
