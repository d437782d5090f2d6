#!/usr/bin/env python
"""Write the lock of a component's jars from a Maven repository (the ``maven`` install method).

    python3 scripts/maven_lock.py hadoop 3.4.1 [--repository URL]

writes roles/<component>/files/maven/<component>-<version>.json: every jar the component's root
artifacts need at run time (compile and runtime scopes, transitive), resolved by Maven together
so that a library two roots share comes in one version, each with its repository path, where it
goes in the release's layout, the repository's published SHA-1, its SHA-256 and size. At install
time the ``sparkfleet.cluster.maven_bundle`` action fetches exactly these files and checks them
against this lock, so what a cluster runs is what was reviewed when the lock was committed.

Needs ``mvn`` (3.8+) and Java; the repository is Maven Central unless --repository names a
site's proxy of it (Nexus, Artifactory), reached through a temporary settings.xml mirror.
"""

import argparse
import concurrent.futures
import hashlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from xml.sax.saxutils import escape

ROOT = pathlib.Path(__file__).resolve().parents[1]
CENTRAL = "https://repo1.maven.org/maven2"
# Pinned, so that the lock does not depend on which plugin versions the machine has cached.
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1"
HELP_PLUGIN = "org.apache.maven.plugins:maven-help-plugin:3.4.1"
POM_NS = {"m": "http://maven.apache.org/POM/4.0.0"}
HEX = {"sha1": re.compile(r"^[0-9a-f]{40}$"), "sha256": re.compile(r"^[0-9a-f]{64}$")}


def _hadoop_dest(group, artifact):
    """Where the Apache release tarball keeps a jar: Hadoop's own modules by subproject, every
    third-party library in common/lib (on every daemon's classpath)."""
    if group == "org.apache.hadoop" and artifact.startswith("hadoop-"):
        for prefix, folder in (("hadoop-hdfs", "hdfs"), ("hadoop-yarn", "yarn"), ("hadoop-mapreduce", "mapreduce")):
            if artifact.startswith(prefix):
                return "share/hadoop/%s/" % folder
        return "share/hadoop/common/"
    return "share/hadoop/common/lib/"


# One entry per component: its root artifacts (groupId:artifactId[:classifier], at the version
# asked for),
# optionally the parent POM the release was built with (its dependencyManagement's versions pin
# the libraries, as in the release), where each jar goes, and the role whose files/maven/ holds
# the lock.
COMPONENTS = {
    "hadoop": {
        "roots": ["org.apache.hadoop:" + name for name in (
            "hadoop-common", "hadoop-hdfs", "hadoop-hdfs-client", "hadoop-yarn-server-resourcemanager",
            "hadoop-yarn-server-nodemanager", "hadoop-yarn-server-web-proxy", "hadoop-yarn-client",
            # Declared "provided" by the ResourceManager, which cannot start without it
            # (NoClassDefFoundError: ...timelineservice.collector.TimelineCollectorManager).
            "hadoop-yarn-server-timelineservice",
            # The NodeManager's mapreduce_shuffle aux-service (yarn-site.xml) is its ShuffleHandler.
            "hadoop-mapreduce-client-shuffle",
            # The NameNode's and DataNode's web UIs (webapps/hdfs, webapps/datanode, found on the
            # classpath; the main jar lacks them). The release ships this jar in share/hadoop/hdfs.
            "hadoop-hdfs:tests")],
        # Without its versions, Maven's nearest-wins rule picks avro's jackson-core 2.10 over the
        # 2.12 that jackson-databind 2.12 needs (NoSuchMethodError at run time).
        "parent": "org.apache.hadoop:hadoop-project",
        "dest": _hadoop_dest,
        "role": "hadoop",
    },
}


def _dependency(group, artifact, version, extra=""):
    return ("<dependency><groupId>%s</groupId><artifactId>%s</artifactId><version>%s</version>%s</dependency>"
            % (escape(group), escape(artifact), escape(version), extra))


def _root_dependency(root, version):
    group, artifact, classifier = (root.split(":") + [""])[:3]
    return _dependency(group, artifact, version, "<classifier>%s</classifier>" % escape(classifier) if classifier else "")


def _root_path(root, version):
    """A root's jar, as a repository path."""
    group, artifact, classifier = (root.split(":") + [""])[:3]
    return "%s/%s/%s/%s-%s%s.jar" % (group.replace(".", "/"), artifact, version, artifact, version,
                                     "-" + classifier if classifier else "")


def _pom(body):
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>%s'
            "<groupId>sparkfleet.lock</groupId><artifactId>lock</artifactId><version>0</version>"
            "<packaging>pom</packaging></project>\n" % body)


def _settings(local_repository, repository):
    mirror = ""
    if repository != CENTRAL:
        # Every repository a POM names goes through the site's proxy: the lock must say where
        # each jar came from, and such a site reaches nothing else.
        mirror = ("<mirrors><mirror><id>sparkfleet-lock</id><mirrorOf>*</mirrorOf><url>%s</url></mirror></mirrors>"
                  % escape(repository))
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            "<settings><localRepository>%s</localRepository>%s</settings>\n" % (escape(local_repository), mirror))


def _mvn(work, pom, *goal):
    (work / "pom.xml").write_text(pom)
    command = ["mvn", "-B", "-q", "-s", str(work / "settings.xml"), "-f", str(work / "pom.xml")] + list(goal)
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit("maven_lock: %s failed (%d):\n%s%s"
                 % (" ".join(command), done.returncode, done.stdout[-4000:], done.stderr[-4000:]))


def _managed_versions(work, parent, version):
    """The parent's dependencyManagement, interpolated, as version-only entries. Its scopes and
    exclusions are left out: they are for the modules that depend on one another inside the
    build (hadoop-project excludes slf4j-reload4j from hadoop-common), while the release ships
    each module with the dependencies its own POM declares; Maven would apply managed exclusions
    to the roots themselves."""
    group, artifact = parent.split(":")
    effective = work / "effective.xml"
    _mvn(work, _pom("<parent><groupId>%s</groupId><artifactId>%s</artifactId><version>%s</version>"
                    "<relativePath/></parent>" % (escape(group), escape(artifact), escape(version))),
         "%s:effective-pom" % HELP_PLUGIN, "-Doutput=%s" % effective)
    entries = []
    for dep in ET.parse(effective).getroot().findall("m:dependencyManagement/m:dependencies/m:dependency", POM_NS):
        extra = "".join("<%s>%s</%s>" % (tag, escape(dep.findtext("m:" + tag, "", POM_NS)), tag)
                        for tag in ("type", "classifier") if dep.findtext("m:" + tag, None, POM_NS))
        entries.append(_dependency(dep.findtext("m:groupId", "", POM_NS), dep.findtext("m:artifactId", "", POM_NS),
                                   dep.findtext("m:version", "", POM_NS), extra))
    if not entries:
        sys.exit("maven_lock: %s:%s has no dependencyManagement" % (parent, version))
    return "<dependencyManagement><dependencies>%s</dependencies></dependencyManagement>" % "".join(entries)


def resolve(roots, parent, version, repository, local_repository):
    """The absolute paths, in the local repository, of every jar the roots need at run time."""
    with tempfile.TemporaryDirectory(prefix="sparkfleet-lock.") as work:
        work = pathlib.Path(work)
        (work / "settings.xml").write_text(_settings(local_repository, repository))
        managed = _managed_versions(work, parent, version) if parent else ""
        listing = work / "dependencies.txt"
        dependencies = "".join(_root_dependency(root, version) for root in roots)
        _mvn(work, _pom("%s<dependencies>%s</dependencies>" % (managed, dependencies)),
             "%s:list" % DEPENDENCY_PLUGIN, "-DincludeScope=runtime", "-DoutputAbsoluteArtifactFilename=true",
             "-DoutputFile=%s" % listing)
        paths = []
        for line in listing.read_text().splitlines():
            line = line.split(" -- ")[0].strip()  # the plugin appends " -- module <name>" to modular jars
            if line.count(":") < 5:
                continue  # the header and blank lines
            # group:artifact:type[:classifier]:version:scope:/absolute/path
            if ":/" not in line:
                sys.exit("maven_lock: no file in the listing's line %r" % line)
            path = line[line.index(":/") + 1:]
            if path.endswith(".jar"):
                paths.append(path)
        return sorted(set(paths))


def coordinates(repository_path):
    """groupId, artifactId, version and file name of a release's repository-relative path
    (group/as/dirs/artifactId/version/artifactId-version[-classifier].ext)."""
    parts = repository_path.split("/")
    group, artifact, version, name = ".".join(parts[:-3]), parts[-3], parts[-2], parts[-1]
    if version.endswith("-SNAPSHOT") or not name.startswith("%s-%s" % (artifact, version)):
        sys.exit("maven_lock: %s is not a release in the repository's layout" % repository_path)
    return group, artifact, version, name


def _get(url, attempts=3):
    for attempt in range(attempts):
        try:
            with urllib.request.urlopen(url, timeout=60) as response:
                return response.read()
        except urllib.error.HTTPError as err:
            sys.exit("maven_lock: %s: HTTP %s %s" % (url, err.code, err.reason))
        except (urllib.error.URLError, OSError) as err:
            # A couple hundred requests: a passing DNS or proxy hiccup should not end the run.
            if attempt == attempts - 1:
                sys.exit("maven_lock: %s: %s" % (url, err))
            time.sleep(2 * (attempt + 1))
    return b""


def _hash_file(path):
    sha1, sha256 = hashlib.sha1(), hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            sha1.update(block)
            sha256.update(block)
    return sha1.hexdigest(), sha256.hexdigest()


def describe(local_path, local_repository, repository, dest_of):
    path = os.path.relpath(local_path, local_repository).replace(os.sep, "/")
    group, artifact, _version, name = coordinates(path)
    published = _get("%s/%s.sha1" % (repository, path)).decode("ascii", "replace").split()
    published = published[0].lower() if published else ""
    if not HEX["sha1"].match(published):
        sys.exit("maven_lock: %s/%s.sha1 is not a SHA-1: %r" % (repository, path, published))
    sha1, sha256 = _hash_file(local_path)
    if sha1 != published:
        sys.exit("maven_lock: %s: the repository publishes SHA-1 %s, the file Maven fetched has %s"
                 % (path, published, sha1))
    return {"path": path, "dest": dest_of(group, artifact) + name, "sha1": sha1, "sha256": sha256,
            "size": os.path.getsize(local_path)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("component", choices=sorted(COMPONENTS))
    parser.add_argument("version")
    parser.add_argument("--repository", default=CENTRAL, help="Maven repository base URL (default: %(default)s)")
    parser.add_argument("--local-repository", default=os.path.expanduser("~/.m2/repository"),
                        help="Maven's local repository (default: %(default)s)")
    parser.add_argument("--output", help="default: roles/<role>/files/maven/<component>-<version>.json")
    args = parser.parse_args(argv)
    if shutil.which("mvn") is None:
        sys.exit("maven_lock: mvn not found")
    spec = COMPONENTS[args.component]
    repository = args.repository.rstrip("/")
    # group:artifact:version[:classifier], as Gradle writes a coordinate
    roots = [":".join(root.split(":")[:2] + [args.version] + root.split(":")[2:]) for root in spec["roots"]]
    local_repository = os.path.abspath(args.local_repository)

    jars = resolve(spec["roots"], spec.get("parent"), args.version, repository, local_repository)
    outside = [j for j in jars if not j.startswith(local_repository + os.sep)]
    if outside:
        sys.exit("maven_lock: resolved outside the local repository %s: %s" % (local_repository, outside[:5]))
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        artifacts = list(pool.map(lambda j: describe(j, local_repository, repository, spec["dest"]), jars))
    artifacts.sort(key=lambda a: a["dest"])

    seen = {}
    for artifact in artifacts:
        if artifact["dest"] in seen:
            sys.exit("maven_lock: %s and %s both go to %s"
                     % (seen[artifact["dest"]], artifact["path"], artifact["dest"]))
        seen[artifact["dest"]] = artifact["path"]
    paths = {a["path"] for a in artifacts}
    missing = [r for r in spec["roots"] if _root_path(r, args.version) not in paths]
    if missing:
        sys.exit("maven_lock: roots missing from the resolution: %s" % ", ".join(missing))

    lock = {"component": args.component, "version": args.version, "repository": repository,
            "roots": roots, "artifacts": artifacts}
    output = pathlib.Path(args.output) if args.output else (
        ROOT / "roles" / spec["role"] / "files" / "maven" / ("%s-%s.json" % (args.component, args.version)))
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(lock, indent=1, sort_keys=True) + "\n")
    total = sum(a["size"] for a in artifacts)
    own = sum(1 for a in artifacts if "/lib/" not in a["dest"])
    print("%s: %d jars (%d of %s itself, %d libraries), %.1f MB"
          % (output.relative_to(ROOT) if output.is_relative_to(ROOT) else output, len(artifacts), own,
             args.component, len(artifacts) - own, total / 1e6))
    return 0


if __name__ == "__main__":
    sys.exit(main())
