# Copyright: sparkfleet contributors
# Apache License 2.0
"""The host's side of the applied-state gate that needs no Ansible: read the records and the run
record, and look for drift (files, units, packages, probes).

The module ``sparkfleet.cluster.applied_state`` imports it. The action of the same name also sends
this file's text, as it is, to ``python3 -I -`` for the scan (``scan``): the one call a no-op run
makes on each host, where a module's start (AnsiballZ and Ansible's module framework) cost more
CPU than the scan itself. So: standard library only, no Ansible import.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import hashlib
import json
import os
import shutil
import subprocess

# Enough to say why; a role with many differences is due either way.
MAX_REASONS = 5
# The record of the last run that went through every layer (no role is named run).
RUN = "run"
# Where a command is looked for besides PATH (sudo's secure_path has them; a plain PATH may not).
_SBIN = ("/usr/local/sbin", "/usr/sbin", "/sbin", "/usr/local/bin", "/usr/bin", "/bin")


def run_command(argv):
    """argv run without a shell, in the C locale (the same output wherever it runs): (rc, stdout).
    A program that is not there answers as a shell would (127), so a probe of a removed program
    differs from its record instead of failing the call."""
    program = shutil.which(argv[0], path=os.pathsep.join([os.environ.get("PATH", "")] + list(_SBIN)))
    if not program:
        return 127, ""
    env = dict(os.environ, LANG="C", LC_ALL="C", LC_MESSAGES="C")
    try:
        proc = subprocess.Popen([program] + [str(arg) for arg in argv[1:]], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, env=env)
    except OSError:
        return 126, ""
    out, _err = proc.communicate()
    return proc.returncode, out.decode("utf-8", "replace")


def sha1(path):
    digest = hashlib.sha1()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(65536), b""):
            digest.update(block)
    return digest.hexdigest()


def expand(patterns):
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


def signature(path):
    """What changes whenever a file's content does: a write moves its change time, which no tool
    sets back (unlike the modification time)."""
    info = os.lstat(path)
    return [info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino]


def files_state(paths, known=None):
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
                signatures[path] = signature(path)
                recorded = known.get(path)
                state[path] = recorded[0] if recorded and recorded[1] == signatures[path] else sha1(path)
            else:
                state[path] = "absent" if not os.path.lexists(path) else "other"
        except OSError as err:
            state[path] = "unreadable: %s" % err.strerror
    return state, signatures


def units_state(units):
    if not units:
        return {}
    rc, out = run_command(["systemctl", "show", "--property=Id,ActiveState,UnitFileState"]
                          + ["%s.service" % u if "." not in u else u for u in units])
    if rc == 127:
        return dict((unit, "no systemctl") for unit in units)
    state = {}
    # One block per unit, in the order asked, separated by blank lines.
    blocks = out.strip().split("\n\n")
    for unit, block in zip(units, blocks):
        props = dict(line.split("=", 1) for line in block.splitlines() if "=" in line)
        state[unit] = "%s/%s" % (props.get("ActiveState", "?"), props.get("UnitFileState", "?"))
    return state


def units_bad(state):
    return ["unit %s is %s (wanted active/enabled)" % (unit, value)
            for unit, value in sorted(state.items()) if value not in ("active/enabled", "active/static", "active/generated")]


def packages_missing(packages):
    """The packages not installed, a name another installed package provides counting as installed
    (a stand-in or a transitional package: apt installs it by that name too)."""
    if not packages:
        return []
    rc, out = run_command(["dpkg-query", "-W", "-f=${db:Status-Abbrev}|${Package}|${Provides}\n"])
    if rc == 127:
        return []
    installed = set()
    for line in out.splitlines():
        status, _sep, rest = line.partition("|")
        # The second letter is the state: installed (the first is what is wanted: install or hold).
        if status[1:2] == "i":
            name, _sep, provides = rest.partition("|")
            installed.add(name.split(":")[0])
            installed.update(p.strip().split(" ")[0] for p in provides.split(",") if p.strip())
    return [name for name in packages if name.split("=")[0] not in installed]


def probes_state(probes):
    state = {}
    for probe in probes:
        rc, out = run_command(probe)
        state[json.dumps(probe)] = hashlib.sha1(("%d\n%s" % (rc, out)).encode()).hexdigest()
    return state


def record_path(directory, role):
    return os.path.join(directory, "%s.json" % role)


def read(directory, role):
    try:
        with open(record_path(directory, role)) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def digest(directory, role):
    try:
        with open(record_path(directory, role), "rb") as handle:
            return hashlib.sha1(handle.read()).hexdigest()
    except OSError:
        return None


def drift(record, units, packages):
    """What differs on the host from a role's record: its files and probes as recorded, the units
    and packages it declares."""
    signatures = record.get("signatures", {})
    known = dict((path, (value, signatures.get(path))) for path, value in record.get("files", {}).items())
    current, _signatures = files_state(list(record.get("files", {})), known)
    reasons = ["file %s %s" % (path, "is gone" if current[path] == "absent" else "changed")
               for path, value in sorted(record.get("files", {}).items()) if current.get(path) != value]
    reasons.extend(units_bad(units_state(units)))
    reasons.extend("package %s is not installed" % name for name in packages_missing(packages))
    probes = probes_state([json.loads(probe) for probe in sorted(record.get("probes", {}))])
    reasons.extend("probe %s answers otherwise" % " ".join(json.loads(probe))
                   for probe, value in sorted(probes.items()) if record["probes"][probe] != value)
    return reasons


def scan(directory, sources):
    """Whether the host is as the last whole run left it: the same sources, each role's record
    as that run left it, and no drift in any of them (one systemctl and one dpkg call for all).
    The reasons it is not; none when it is."""
    run = read(directory, RUN)
    if run is None:
        return ["no record of a run that went through every layer"]
    if run.get("sources") != sources:
        return ["what the roles' inputs come from changed since the last whole run"]
    reasons, units, packages = [], [], []
    for role, recorded_digest in sorted(run.get("roles", {}).items()):
        record = read(directory, role)
        if record is None or recorded_digest is None or digest(directory, role) != recorded_digest:
            reasons.append("%s was applied since the last whole run, or declares nothing to check" % role)
            continue
        units.extend(u for u in record.get("units", []) if u not in units)
        packages.extend(p for p in record.get("packages", []) if p not in packages)
        reasons.extend(drift(record, [], []))
    reasons.extend(units_bad(units_state(units)))
    reasons.extend("package %s is not installed" % name for name in packages_missing(packages))
    return reasons
