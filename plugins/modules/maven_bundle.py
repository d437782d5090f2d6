#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: sparkfleet contributors
# Apache License 2.0
"""Documentation of the maven_bundle action (plugins/action/maven_bundle.py), which does all the
work on the controller: there is no host side."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: maven_bundle
short_description: Assemble a release tarball from the jars a lock lists in a Maven repository
description:
  - Runs on the controller only. For a component whose release tarball cannot be downloaded but
    whose jars are in a Maven repository (Maven Central, or a site's Nexus or Artifactory proxy of
    it), fetches every jar the lock O(lock) lists into the controller's download cache and
    assembles one C(tar.gz) laid out like the release (for Hadoop, C(share/hadoop/...)), which a
    role then unpacks on its hosts like the release tarball.
  - Each jar is fetched once. It is kept only when the repository's published C(.sha1) equals the
    lock's SHA-1 and the file's SHA-1, SHA-256 and size equal the lock's; anything else fails,
    naming the artifact and both digests, and leaves nothing in the cache.
  - The tarball is deterministic (sorted entries, directories included, modification time 0, owner
    and group C(root) with ids 0, modes C(0644) and C(0755), gzip header time 0). The same lock and
    O(prefix) give the same bytes on every controller. It is written next to O(dest) and renamed into
    place. A sidecar O(dest)C(.lock-sha256) records the SHA-256 of the lock file and the prefix it
    was built from; while both match, the tarball is left alone and nothing is fetched.
  - Locks are written by C(scripts/maven_lock.py) and committed under C(roles/<role>/files/maven/).
version_added: "1.2.0"
author:
  - sparkfleet maintainers (!UNKNOWN)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Reports whether the tarball would be written and how many jars are missing from the cache; fetches and writes nothing.
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  lock:
    description:
      - The lock file on the controller (JSON written by C(scripts/maven_lock.py)), e.g.
        C(roles/hadoop/files/maven/hadoop-3.4.1.json).
    type: path
    required: true
  repository:
    description:
      - Base URL of the Maven repository the jars are fetched from. A site's proxy of Maven Central
        serves the same files under the same paths. The lock's digests are checked whatever the
        repository.
    type: str
    default: https://repo1.maven.org/maven2
  username:
    description: User name for HTTP basic authentication to O(repository).
    type: str
  password:
    description: Password for HTTP basic authentication to O(repository).
    type: str
  cache_dir:
    description:
      - Download cache on the controller. Jars are kept under C(<cache_dir>/maven/<repository path>),
        shared by every lock that lists them.
    type: path
    required: true
  dest:
    description: The C(tar.gz) to write on the controller. Its directory is created if missing.
    type: path
    required: true
  prefix:
    description:
      - The one top-level directory inside the tarball (one path component). Defaults to
        C(<component>-<version>) from the lock.
    type: str
  timeout:
    description: Seconds to wait on the repository for each request.
    type: int
    default: 60
seealso:
  - module: ansible.builtin.get_url
  - module: ansible.builtin.unarchive
"""

EXAMPLES = r"""
- name: Hadoop | Assemble the Hadoop distribution from Maven Central.
  sparkfleet.cluster.maven_bundle:
    lock: "{{ role_path }}/files/maven/hadoop-{{ hadoop_version }}.json"
    cache_dir: "{{ hadoop_download_cache_dir }}"
    dest: "{{ hadoop_download_cache_dir }}/hadoop-{{ hadoop_version }}-maven.tar.gz"
    prefix: "hadoop-{{ hadoop_version }}-maven"
  run_once: true

- name: Hadoop | Assemble it from the site's Nexus proxy of Maven Central.
  sparkfleet.cluster.maven_bundle:
    lock: "{{ role_path }}/files/maven/hadoop-{{ hadoop_version }}.json"
    repository: https://nexus.example.com/repository/maven-central
    username: "{{ nexus_user }}"
    password: "{{ nexus_password }}"
    cache_dir: /var/cache/sparkfleet
    dest: /var/cache/sparkfleet/hadoop-{{ hadoop_version }}-maven.tar.gz
  run_once: true
"""

RETURN = r"""
path:
  description: The tarball, O(dest).
  type: str
  returned: always
  sample: /root/.cache/sparkfleet/downloads/hadoop-3.4.1-maven.tar.gz
artifacts:
  description: How many jars the lock lists (all of them are in the tarball).
  type: int
  returned: always
  sample: 170
bytes:
  description: Size of the tarball in bytes (in check mode, of the one already there, else 0).
  type: int
  returned: always
downloaded:
  description: How many jars this run fetched from the repository (0 in check mode).
  type: int
  returned: always
missing:
  description: How many jars were not in the cache, with the right SHA-256, when the run started (0 when the tarball was already up to date).
  type: int
  returned: always
"""
