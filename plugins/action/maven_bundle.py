# -*- coding: utf-8 -*-
# Copyright: sparkfleet contributors
# Apache License 2.0
"""Assemble a release tarball, on the controller, from the jars a lock lists in a Maven repository.

Documented in plugins/modules/maven_bundle.py. The controller fetches each jar once (the download
cache is shared by every cluster and every lock); hosts get the one tarball, as they would get the
release's, so a repository that only the controller reaches is enough.
"""

from __future__ import annotations

import concurrent.futures
import gzip
import hashlib
import json
import os
import re
import tarfile
import tempfile
import urllib.error

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_bytes, to_native, to_text
from ansible.module_utils.urls import open_url
from ansible.plugins.action import ActionBase

CENTRAL = "https://repo1.maven.org/maven2"
ARGUMENT_SPEC = {
    "lock": {"type": "path", "required": True},
    "repository": {"type": "str", "default": CENTRAL},
    "username": {"type": "str"},
    "password": {"type": "str", "no_log": True},
    "cache_dir": {"type": "path", "required": True},
    "dest": {"type": "path", "required": True},
    "prefix": {"type": "str"},
    "timeout": {"type": "int", "default": 60},
}
HEX = {"sha1": re.compile(r"^[0-9a-f]{40}$"), "sha256": re.compile(r"^[0-9a-f]{64}$")}
# A couple hundred small files: a few requests in flight hide the round trips without looking
# like a crawler to a site's repository manager.
THREADS = 8
BLOCK = 1 << 20


class Rejected(Exception):
    """A jar that could not be fetched or did not match the lock (raised in the download threads)."""


def _relative(value):
    """Whether value is a plain relative path that stays below where it is joined."""
    return (isinstance(value, str) and value != "" and not value.startswith("/") and "\\" not in value
            and all(part not in ("", ".", "..") for part in value.split("/")))


def read_lock(path):
    """The lock's bytes and its content, checked enough that nothing it names escapes the cache
    or the tarball."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
        lock = json.loads(data)
    except (OSError, ValueError) as err:
        raise AnsibleActionFail("maven_bundle: lock %s cannot be read: %s" % (path, to_native(err))) from err
    if not isinstance(lock, dict) or not isinstance(lock.get("artifacts"), list) or not lock["artifacts"]:
        raise AnsibleActionFail("maven_bundle: lock %s has no list of artifacts" % path)
    dests = set()
    for index, artifact in enumerate(lock["artifacts"]):
        where = "maven_bundle: lock %s, artifact %d" % (path, index)
        if not isinstance(artifact, dict):
            raise AnsibleActionFail("%s is not a mapping" % where)
        for key in ("path", "dest"):
            if not _relative(artifact.get(key)):
                raise AnsibleActionFail("%s: %s must be a relative path without '..', got %r" % (where, key, artifact.get(key)))
        for key, pattern in HEX.items():
            if not isinstance(artifact.get(key), str) or not pattern.match(artifact[key]):
                raise AnsibleActionFail("%s (%s): %s must be lowercase hex, got %r" % (where, artifact["path"], key, artifact.get(key)))
        if not isinstance(artifact.get("size"), int) or isinstance(artifact["size"], bool) or artifact["size"] < 0:
            raise AnsibleActionFail("%s (%s): size must be a whole number of bytes" % (where, artifact["path"]))
        if artifact["dest"] in dests:
            raise AnsibleActionFail("%s (%s): a second artifact goes to %s" % (where, artifact["path"], artifact["dest"]))
        dests.add(artifact["dest"])
    return data, lock


def _digests(path):
    sha1, sha256 = hashlib.sha1(), hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(BLOCK), b""):
            sha1.update(block)
            sha256.update(block)
    return sha1.hexdigest(), sha256.hexdigest()


def cached(cache_dir, artifact):
    """Whether the cache holds the artifact, with the lock's size and SHA-256."""
    path = os.path.join(cache_dir, "maven", artifact["path"])
    try:
        if os.path.getsize(path) != artifact["size"]:
            return False
    except OSError:
        return False
    return _digests(path)[1] == artifact["sha256"]


class Repository:
    """GET requests to one Maven repository, with the task's credentials and timeout."""

    def __init__(self, base, username, password, timeout):
        self.base, self.username, self.password, self.timeout = base.rstrip("/"), username, password, timeout

    def url(self, path):
        return "%s/%s" % (self.base, path)

    def open(self, path):
        try:
            return open_url(self.url(path), timeout=self.timeout, url_username=self.username,
                            url_password=self.password, force_basic_auth=bool(self.username),
                            http_agent="sparkfleet-maven-bundle")
        except urllib.error.HTTPError as err:
            raise Rejected("%s: HTTP %s %s" % (self.url(path), err.code, err.reason)) from err
        except (urllib.error.URLError, OSError, ValueError) as err:
            raise Rejected("%s: %s" % (self.url(path), to_native(err))) from err

    def published_sha1(self, path):
        """The SHA-1 the repository publishes beside the file (some write "<hex>  <name>")."""
        with self.open(path + ".sha1") as response:
            words = to_text(response.read(4096), errors="replace").split()
        return words[0].lower() if words else ""


def fetch(repository, cache_dir, artifact):
    """Put one artifact into the cache, or fail naming it; a rejected file is removed."""
    final = os.path.join(cache_dir, "maven", artifact["path"])
    published = repository.published_sha1(artifact["path"])
    if published != artifact["sha1"]:
        raise Rejected("%s: the repository publishes SHA-1 %s, the lock says %s"
                       % (artifact["path"], published or "(nothing)", artifact["sha1"]))
    os.makedirs(os.path.dirname(final), exist_ok=True)
    # A name of its own: two runs on one controller may fetch the same jar at once.
    handle, part = tempfile.mkstemp(prefix=os.path.basename(final) + ".", suffix=".part", dir=os.path.dirname(final))
    try:
        sha1, sha256, size = hashlib.sha1(), hashlib.sha256(), 0
        with os.fdopen(handle, "wb") as out, repository.open(artifact["path"]) as response:
            for block in iter(lambda: response.read(BLOCK), b""):
                out.write(block)
                sha1.update(block)
                sha256.update(block)
                size += len(block)
        for name, got in (("SHA-1", sha1.hexdigest()), ("SHA-256", sha256.hexdigest())):
            want = artifact["sha1" if name == "SHA-1" else "sha256"]
            if got != want:
                raise Rejected("%s from %s: %s %s, the lock says %s"
                               % (artifact["path"], repository.base, name, got, want))
        if size != artifact["size"]:
            raise Rejected("%s from %s: %d bytes, the lock says %d"
                           % (artifact["path"], repository.base, size, artifact["size"]))
        os.chmod(part, 0o644)
        os.replace(part, final)
    finally:
        if os.path.exists(part):
            os.unlink(part)


def _tar_info(name, size=0, directory=False):
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE if directory else tarfile.REGTYPE
    info.mode = 0o755 if directory else 0o644
    info.size = 0 if directory else size
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


def write_tarball(part, prefix, cache_dir, artifacts):
    """The deterministic tar.gz: the same lock and prefix give the same bytes."""
    entries = {}
    for artifact in artifacts:
        name = "%s/%s" % (prefix, artifact["dest"])
        entries[name] = artifact
        parent = os.path.dirname(name)
        while parent and parent not in entries:
            entries[parent] = None
            parent = os.path.dirname(parent)
    with open(part, "wb") as raw:
        # No file name in the gzip header: it would be the temporary one.
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6) as compressed:
            with tarfile.open(fileobj=compressed, mode="w", format=tarfile.PAX_FORMAT) as tar:
                for name in sorted(entries):
                    artifact = entries[name]
                    if artifact is None:
                        tar.addfile(_tar_info(name, directory=True))
                        continue
                    with open(os.path.join(cache_dir, "maven", artifact["path"]), "rb") as handle:
                        tar.addfile(_tar_info(name, artifact["size"]), handle)


class ActionModule(ActionBase):
    """Fetch what the lock lists into the cache, then write the tarball."""

    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(ARGUMENT_SPEC)

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp  # nothing runs on a host
        args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)[1]
        if not re.match(r"^https?://[^/]", args["repository"]):
            raise AnsibleActionFail("maven_bundle: repository must be an http(s) URL, got %r" % args["repository"])
        if args["timeout"] <= 0:
            raise AnsibleActionFail("maven_bundle: timeout must be a positive number of seconds, got %d" % args["timeout"])
        if args["password"] is not None and not args["username"]:
            raise AnsibleActionFail("maven_bundle: password is set but username is not")
        data, lock = read_lock(args["lock"])
        prefix = args["prefix"]
        if prefix is None:
            prefix = "%s-%s" % (lock.get("component", "bundle"), lock.get("version", "0"))
        if not _relative(prefix) or "/" in prefix:
            raise AnsibleActionFail("maven_bundle: prefix must be one directory name, got %r" % prefix)
        dest, cache_dir = args["dest"], args["cache_dir"]
        artifacts = lock["artifacts"]
        stamp = "%s %s\n" % (hashlib.sha256(data).hexdigest(), prefix)
        result.update(path=dest, artifacts=len(artifacts), downloaded=0, missing=0, changed=False)

        # The stamp speaks for the tarball: while it matches, the cache is not even read.
        if os.path.isfile(dest) and _read_text(dest + ".lock-sha256") == stamp:
            result["bytes"] = os.path.getsize(dest)
            return result

        missing = [a for a in artifacts if not cached(cache_dir, a)]
        result.update(missing=len(missing), changed=True)
        if self._task.check_mode:
            result["bytes"] = os.path.getsize(dest) if os.path.isfile(dest) else 0
            result["msg"] = "would fetch %d of %d jars and write %s" % (len(missing), len(artifacts), dest)
            return result

        repository = Repository(args["repository"], args["username"], args["password"], args["timeout"])
        failures = []
        with concurrent.futures.ThreadPoolExecutor(max_workers=THREADS) as pool:
            for future in [pool.submit(fetch, repository, cache_dir, a) for a in missing]:
                try:
                    future.result()
                except Rejected as err:
                    failures.append(to_text(err))
        result["downloaded"] = len(missing) - len(failures)
        if failures:
            raise AnsibleActionFail("maven_bundle: %d of %d jars failed: %s" % (
                len(failures), len(missing), "; ".join(failures[:5]) + ("; ..." if len(failures) > 5 else "")),
                result=dict(result, failures=failures))

        os.makedirs(os.path.dirname(os.path.abspath(dest)), exist_ok=True)
        part = dest + ".part"
        try:
            write_tarball(part, prefix, cache_dir, artifacts)
            os.replace(part, dest)
        finally:
            if os.path.exists(part):
                os.unlink(part)
        with open(dest + ".lock-sha256", "wb") as handle:
            handle.write(to_bytes(stamp))
        result["bytes"] = os.path.getsize(dest)
        return result


def _read_text(path):
    try:
        with open(path, "rb") as handle:
            return to_text(handle.read(), errors="replace")
    except OSError:
        return None
