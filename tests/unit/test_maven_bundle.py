"""The maven install method: the action that assembles a release tarball from a lock's jars
(plugins/action/maven_bundle.py), run against a fake Maven repository served over HTTP, and the
committed Hadoop lock (scripts/maven_lock.py writes it)."""

import functools
import hashlib
import http.server
import io
import json
import re
import tarfile
import threading
import types

import pytest
from ansible.errors import AnsibleActionFail

from conftest import ROOT, load_plugin

action = load_plugin("action", "maven_bundle")

JARS = {
    # repository path: (layout path, content)
    "org/apache/hadoop/hadoop-common/3.4.1/hadoop-common-3.4.1.jar":
        ("share/hadoop/common/hadoop-common-3.4.1.jar", b"common classes"),
    "org/apache/hadoop/hadoop-hdfs/3.4.1/hadoop-hdfs-3.4.1.jar":
        ("share/hadoop/hdfs/hadoop-hdfs-3.4.1.jar", b"hdfs classes" * 1000),
    "com/google/guava/guava/27.0-jre/guava-27.0-jre.jar":
        ("share/hadoop/common/lib/guava-27.0-jre.jar", b"guava"),
    "io/netty/netty-transport-native-epoll/4.1.100.Final/netty-transport-native-epoll-4.1.100.Final-linux-x86_64.jar":
        ("share/hadoop/common/lib/netty-transport-native-epoll-4.1.100.Final-linux-x86_64.jar", b"epoll"),
}


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # pylint: disable=redefined-builtin
        pass


@pytest.fixture
def repo(tmp_path):
    """A Maven repository (jars and their .sha1 files) served on localhost, and a lock of it."""
    root = tmp_path / "repo"
    artifacts = []
    for path, (dest, content) in JARS.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(content)
        sha1 = hashlib.sha1(content).hexdigest()
        # Central writes the bare digest; some repository managers add the file name.
        (root / (path + ".sha1")).write_text(sha1 if "guava" in path else "%s  %s" % (sha1, path.rsplit("/", 1)[1]))
        artifacts.append({"path": path, "dest": dest, "sha1": sha1, "sha256": hashlib.sha256(content).hexdigest(),
                          "size": len(content)})
    lock = tmp_path / "hadoop-3.4.1.json"
    lock.write_text(json.dumps({"component": "hadoop", "version": "3.4.1", "repository": "x", "roots": [],
                                "artifacts": sorted(artifacts, key=lambda a: a["dest"])}))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield types.SimpleNamespace(root=root, lock=lock, url="http://127.0.0.1:%d" % server.server_address[1],
                                cache=tmp_path / "cache", dest=tmp_path / "out" / "hadoop.tar.gz")
    server.shutdown()
    server.server_close()


def bundle(repo, check_mode=False, without=(), **args):
    """Run the action as a task would, on the controller."""
    task_args = {"lock": str(repo.lock), "repository": repo.url, "cache_dir": str(repo.cache),
                 "dest": str(repo.dest), "timeout": 5}
    task_args.update(args)
    for key in without:
        del task_args[key]
    task = types.SimpleNamespace(args=task_args, check_mode=check_mode, async_val=0,
                                 action="sparkfleet.cluster.maven_bundle")
    connection = types.SimpleNamespace(_shell=types.SimpleNamespace(tmpdir=None))
    plugin = action.ActionModule(task, connection, None, None, None)
    return plugin.run(task_vars={})


def cache_files(repo):
    return sorted(str(p.relative_to(repo.cache)) for p in repo.cache.rglob("*") if p.is_file())


def test_the_bundle_is_the_release_layout_and_deterministic(repo):
    first = bundle(repo, prefix="hadoop-3.4.1-maven")
    assert first["changed"] is True and first["downloaded"] == len(JARS) and first["artifacts"] == len(JARS)
    assert first["bytes"] == repo.dest.stat().st_size
    data = repo.dest.read_bytes()
    assert data[4:8] == b"\0\0\0\0"  # gzip header time 0
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        members = tar.getmembers()
        names = [m.name for m in members]
        assert names == sorted(names)
        assert "hadoop-3.4.1-maven" in names and "hadoop-3.4.1-maven/share/hadoop/common/lib" in names
        for member in members:
            assert (member.mtime, member.uid, member.gid, member.uname, member.gname) == (0, 0, 0, "root", "root")
            assert member.mode == (0o755 if member.isdir() else 0o644), member.name
        for dest, content in JARS.values():
            assert tar.extractfile("hadoop-3.4.1-maven/" + dest).read() == content
        assert {m.name for m in members if m.isfile()} == {"hadoop-3.4.1-maven/" + d for d, _content in JARS.values()}
    assert cache_files(repo) == sorted("maven/" + p for p in JARS)

    # Another controller, another cache: the same bytes.
    other = bundle(repo, prefix="hadoop-3.4.1-maven", cache_dir=str(repo.cache) + "2", dest=str(repo.dest) + "2")
    assert other["downloaded"] == len(JARS)
    assert (repo.dest.parent / "hadoop.tar.gz2").read_bytes() == data


def test_a_second_run_changes_and_fetches_nothing(repo):
    bundle(repo)
    before = repo.dest.stat().st_mtime_ns
    for path in JARS:
        (repo.root / path).unlink()  # the repository is not even asked
    again = bundle(repo)
    assert (again["changed"], again["downloaded"], again["missing"]) == (False, 0, 0)
    assert repo.dest.stat().st_mtime_ns == before


def test_the_prefix_defaults_to_the_lock_and_a_new_one_rewrites(repo):
    bundle(repo)
    with tarfile.open(repo.dest) as tar:
        assert tar.getnames()[0] == "hadoop-3.4.1"
    renamed = bundle(repo, prefix="hadoop-maven")
    # The jars are cached: only the tarball is written again.
    assert (renamed["changed"], renamed["downloaded"], renamed["missing"]) == (True, 0, 0)
    with tarfile.open(repo.dest) as tar:
        assert tar.getnames()[0] == "hadoop-maven"


def test_a_changed_lock_rewrites_the_tarball_from_the_cache(repo):
    bundle(repo)
    lock = json.loads(repo.lock.read_text())
    lock["artifacts"] = lock["artifacts"][1:]
    repo.lock.write_text(json.dumps(lock))
    answer = bundle(repo)
    assert (answer["changed"], answer["downloaded"], answer["artifacts"]) == (True, 0, len(JARS) - 1)


def test_a_jar_that_differs_from_the_lock_fails_and_is_not_cached(repo):
    path = "com/google/guava/guava/27.0-jre/guava-27.0-jre.jar"
    tampered = b"guava, with something added"
    (repo.root / path).write_bytes(tampered)
    # The repository's .sha1 agrees with the lock: only the file is wrong.
    with pytest.raises(AnsibleActionFail) as failed:
        bundle(repo)
    message = str(failed.value)
    assert path in message and hashlib.sha1(tampered).hexdigest() in message
    assert hashlib.sha1(b"guava").hexdigest() in message
    assert "maven/" + path not in cache_files(repo)
    assert not [f for f in cache_files(repo) if f.endswith(".part")]
    assert not repo.dest.exists()


def test_a_repository_sha1_that_disagrees_with_the_lock_fails(repo):
    path = "org/apache/hadoop/hadoop-common/3.4.1/hadoop-common-3.4.1.jar"
    (repo.root / (path + ".sha1")).write_text("0" * 40)
    with pytest.raises(AnsibleActionFail) as failed:
        bundle(repo)
    message = str(failed.value)
    assert path in message and "publishes SHA-1 " + "0" * 40 in message
    assert hashlib.sha1(b"common classes").hexdigest() in message
    assert "maven/" + path not in cache_files(repo)
    assert not repo.dest.exists()


def test_a_missing_artifact_fails_naming_it(repo):
    path = "org/apache/hadoop/hadoop-hdfs/3.4.1/hadoop-hdfs-3.4.1.jar"
    (repo.root / path).unlink()
    with pytest.raises(AnsibleActionFail) as failed:
        bundle(repo)
    assert re.search(re.escape(path) + r": HTTP 404", str(failed.value))
    assert failed.value.result["downloaded"] == len(JARS) - 1
    assert not repo.dest.exists()
    # The others are cached: a fixed repository serves only what was missing.
    (repo.root / path).write_bytes(JARS[path][1])
    assert bundle(repo)["downloaded"] == 1


def test_check_mode_writes_nothing(repo):
    answer = bundle(repo, check_mode=True)
    assert (answer["changed"], answer["downloaded"], answer["missing"]) == (True, 0, len(JARS))
    assert not repo.cache.exists() and not repo.dest.parent.exists()
    bundle(repo)
    assert bundle(repo, check_mode=True)["changed"] is False


@pytest.mark.parametrize("args, named", [
    ({"lock": None}, "lock"),
    ({"cache_dir": None}, "cache_dir"),
    ({"timeout": 0}, "timeout"),
    ({"timeout": "soon"}, "timeout"),
    ({"repository": "ftp://example.com/maven2"}, "repository"),
    ({"prefix": "../up"}, "prefix"),
    ({"password": "secret"}, "username"),
    ({"checksum": "x"}, "checksum"),
])
def test_bad_arguments_are_named(repo, args, named):
    with pytest.raises(AnsibleActionFail) as failed:
        bundle(repo, without=[k for k, v in args.items() if v is None],
               **{k: v for k, v in args.items() if v is not None})
    assert named in str(failed.value)
    assert "secret" not in str(failed.value)


@pytest.mark.parametrize("change, named", [
    (lambda a: a[0].update(dest="../../etc/passwd"), "dest"),
    (lambda a: a[0].update(path="/etc/passwd"), "path"),
    (lambda a: a[0].update(sha256="ABC"), "sha256"),
    (lambda a: a[1].update(dest=a[0]["dest"]), "a second artifact goes to"),
])
def test_a_lock_that_names_paths_outside_or_bad_digests_is_refused(repo, change, named):
    lock = json.loads(repo.lock.read_text())
    change(lock["artifacts"])
    repo.lock.write_text(json.dumps(lock))
    with pytest.raises(AnsibleActionFail, match=named):
        bundle(repo)
    assert not repo.cache.exists()


# The committed lock -------------------------------------------------------------------------------

HADOOP_LOCK = ROOT / "roles" / "hadoop" / "files" / "maven" / "hadoop-3.4.1.json"


def test_the_committed_hadoop_lock_is_well_formed():
    lock = json.loads(HADOOP_LOCK.read_text())
    assert (lock["component"], lock["version"]) == ("hadoop", "3.4.1")
    assert lock["repository"] == "https://repo1.maven.org/maven2"
    artifacts = lock["artifacts"]
    dests = [a["dest"] for a in artifacts]
    assert dests == sorted(dests) and len(set(dests)) == len(dests)
    for artifact in artifacts:
        assert re.fullmatch(r"[0-9a-f]{40}", artifact["sha1"]) and re.fullmatch(r"[0-9a-f]{64}", artifact["sha256"])
        assert artifact["dest"].startswith("share/hadoop/") and artifact["dest"].endswith(".jar")
        assert artifact["path"].endswith("/" + artifact["dest"].rsplit("/", 1)[1]), artifact
        assert isinstance(artifact["size"], int) and artifact["size"] > 0
    by_dest = {a["dest"]: a["path"] for a in artifacts}
    for module, folder in (("hadoop-common", "common"), ("hadoop-hdfs", "hdfs"),
                           ("hadoop-yarn-server-resourcemanager", "yarn"), ("hadoop-yarn-server-nodemanager", "yarn")):
        assert by_dest["share/hadoop/%s/%s-3.4.1.jar" % (folder, module)] == \
            "org/apache/hadoop/%s/3.4.1/%s-3.4.1.jar" % (module, module)
    # One version of each library (the release's: jackson-core as new as jackson-databind).
    versions = {}
    for artifact in artifacts:
        module, version, _name = artifact["path"].rsplit("/", 2)
        versions.setdefault(module, set()).add(version)
    assert not {m: v for m, v in versions.items() if len(v) > 1}
    assert "share/hadoop/common/lib/jackson-core-2.12.7.jar" in by_dest
    assert "share/hadoop/common/lib/slf4j-reload4j-1.7.36.jar" in by_dest
    # What the daemons need beyond the roots' compile and runtime scopes: the ResourceManager's
    # "provided" timeline service, the NodeManager's shuffle aux-service, the HDFS web UIs.
    for dest in ("yarn/hadoop-yarn-server-timelineservice-3.4.1.jar", "mapreduce/hadoop-mapreduce-client-shuffle-3.4.1.jar",
                 "hdfs/hadoop-hdfs-3.4.1-tests.jar"):
        assert "share/hadoop/" + dest in by_dest
    # The action reads it as it is.
    assert action.read_lock(str(HADOOP_LOCK))[1] == lock


def test_the_hadoop_layout_rule():
    spec = _lock_script().COMPONENTS["hadoop"]
    dest = spec["dest"]
    assert dest("org.apache.hadoop", "hadoop-hdfs-client") == "share/hadoop/hdfs/"
    assert dest("org.apache.hadoop", "hadoop-yarn-api") == "share/hadoop/yarn/"
    assert dest("org.apache.hadoop", "hadoop-mapreduce-client-core") == "share/hadoop/mapreduce/"
    assert dest("org.apache.hadoop", "hadoop-auth") == "share/hadoop/common/"
    assert dest("org.apache.hadoop.thirdparty", "hadoop-shaded-guava") == "share/hadoop/common/lib/"
    assert dest("com.google.guava", "guava") == "share/hadoop/common/lib/"
    assert _lock_script().coordinates("io/netty/netty-x/4.1.100.Final/netty-x-4.1.100.Final-linux-x86_64.jar") == (
        "io.netty", "netty-x", "4.1.100.Final", "netty-x-4.1.100.Final-linux-x86_64.jar")


def _lock_script():
    import importlib.util  # pylint: disable=import-outside-toplevel
    spec = importlib.util.spec_from_file_location("sparkfleet_maven_lock", ROOT / "scripts" / "maven_lock.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
