"""sparkfleet.cluster.files (plugins/action/files.py, plugins/modules/files.py): a role's
directories, files and links in one call, run for real by ansible-playbook on this machine
(connection local), against a role of templates and files made for each test."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

from conftest import ROOT

ANSIBLE_PLAYBOOK = pathlib.Path(sys.executable).parent / "ansible-playbook"


@pytest.fixture
def site(tmp_path):
    """A role `demo` (a template that reads a variable, a file), and where its entries go."""
    role = tmp_path / "roles" / "demo"
    (role / "templates").mkdir(parents=True)
    (role / "files").mkdir()
    (role / "tasks").mkdir()
    (role / "templates" / "app.conf.j2").write_text("greeting = {{ greeting }}\n{% if loud %}\nloud = yes\n{% endif %}\n")
    (role / "files" / "static.txt").write_text("as it is\n")
    return tmp_path


def apply(site, entries, check=False, **variables):
    """Run the role's one files task with these entries; the task's result (failed or not)."""
    (site / "roles" / "demo" / "tasks" / "main.yml").write_text(json.dumps(
        [{"name": "Demo | Files.", "sparkfleet.cluster.files": {"files": entries}, "register": "out"}]))
    (site / "play.yml").write_text(json.dumps([{
        "hosts": "localhost", "connection": "local", "gather_facts": False,
        "vars": {"greeting": "hello", "loud": False, "ansible_python_interpreter": sys.executable, **variables},
        "roles": ["demo"]}]))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(ROOT / "collections"), ANSIBLE_STDOUT_CALLBACK="json",
               ANSIBLE_ROLES_PATH=str(site / "roles"), ANSIBLE_LOCALHOST_WARNING="false",
               ANSIBLE_INVENTORY_UNPARSED_WARNING="false")
    env.pop("ANSIBLE_CONFIG", None)  # the project's ansible.cfg (make exports it) names the lab
    done = subprocess.run([str(ANSIBLE_PLAYBOOK), "-i", "localhost,", str(site / "play.yml")]
                          + (["--check"] if check else []),
                          cwd=site, env=env, capture_output=True, text=True, check=False)
    assert done.stdout.startswith("{"), done.stderr
    report = json.loads(done.stdout)
    (task,) = report["plays"][0]["tasks"]
    return task["hosts"]["localhost"]


def entries(site, **extra):
    out = site / "out"
    return [
        {"path": str(out), "state": "directory", "mode": "0750"},
        {"path": str(out / "app.conf"), "template": "app.conf.j2", "mode": "0640", "backup": True},
        {"path": str(out / "static.txt"), "src": "static.txt"},
        {"path": str(out / "inline"), "content": "one line\n", "mode": "0600"},
        {"path": str(out / "current"), "state": "link", "link": str(out / "app.conf")},
    ] + extra.get("more", [])


def test_every_entry_in_one_call_then_nothing_to_change(site):
    first = apply(site, entries(site))
    assert first["changed"] and not first.get("failed"), first.get("msg")
    assert [r["changed"] for r in first["results"]] == [True] * 5
    out = site / "out"
    assert (out / "app.conf").read_text() == "greeting = hello\n"
    assert (out / "static.txt").read_text() == "as it is\n"
    assert oct((out / "app.conf").stat().st_mode & 0o777) == "0o640"
    assert oct(out.stat().st_mode & 0o777) == "0o750"
    assert oct((out / "inline").stat().st_mode & 0o777) == "0o600"
    assert os.readlink(out / "current") == str(out / "app.conf")
    assert first["results"][1]["mode"] == "0640" and first["results"][1]["dest"] == str(out / "app.conf")

    again = apply(site, entries(site))
    assert not again["changed"] and [r["changed"] for r in again["results"]] == [False] * 5


def test_only_what_differs_changes_and_a_replaced_file_is_kept(site):
    apply(site, entries(site))
    (site / "out" / "static.txt").write_text("edited on the host\n")
    os.chmod(site / "out" / "inline", 0o644)
    changed = apply(site, entries(site), loud=True)
    assert [r["changed"] for r in changed["results"]] == [False, True, True, True, False]
    assert (site / "out" / "app.conf").read_text() == "greeting = hello\nloud = yes\n"
    assert (site / "out" / "static.txt").read_text() == "as it is\n"
    assert oct((site / "out" / "inline").stat().st_mode & 0o777) == "0o600"
    kept = changed["results"][1]["backup_file"]
    assert pathlib.Path(kept).read_text() == "greeting = hello\n"
    assert "backup_file" not in changed["results"][2]  # no backup asked for


def test_a_refused_file_is_not_written(site):
    apply(site, entries(site))
    refused = apply(site, entries(site)[:1] + [
        {"path": str(site / "out" / "app.conf"), "template": "app.conf.j2", "validate": "grep -q loud %s"}],
        greeting="changed")
    assert refused["failed"]
    assert "refused the new %s" % (site / "out" / "app.conf") in refused["msg"]
    assert (site / "out" / "app.conf").read_text() == "greeting = hello\n"
    accepted = apply(site, [{"path": str(site / "out" / "app.conf"), "template": "app.conf.j2",
                             "validate": "grep -q loud %s"}], loud=True)
    assert accepted["changed"] and "loud = yes" in (site / "out" / "app.conf").read_text()


def test_absent_removes_and_check_mode_writes_nothing(site):
    apply(site, entries(site))
    gone = [{"path": str(site / "out" / "inline"), "state": "absent"},
            {"path": str(site / "out"), "state": "absent"}]
    checked = apply(site, gone, check=True)
    assert checked["changed"] and (site / "out" / "inline").exists()
    removed = apply(site, gone)
    assert removed["changed"] and not (site / "out").exists()
    assert not apply(site, gone)["changed"]
    planned = apply(site, entries(site), check=True)
    assert planned["changed"] and not (site / "out").exists()


@pytest.mark.parametrize("entry, message", [
    ({"path": "/x", "template": "app.conf.j2", "content": "y"}, "give one of content, template or src"),
    ({"path": "/x", "contents": "y"}, "unknown keys contents"),
    ({"path": "/x", "template": "missing.j2"}, "Could not find or access 'missing.j2'"),
])
def test_a_wrong_entry_is_refused_before_the_host_is_asked(site, entry, message):
    refused = apply(site, [entry])
    assert refused["failed"] and message in refused["msg"]


def test_an_entrys_vars_reach_its_template_only(site):
    out = site / "out"
    done = apply(site, [{"path": str(out), "state": "directory"},
                        {"path": str(out / "a.conf"), "template": "app.conf.j2", "vars": {"greeting": "from a"}},
                        {"path": str(out / "b.conf"), "template": "app.conf.j2"}])
    assert done["changed"], done.get("msg")
    assert (out / "a.conf").read_text() == "greeting = from a\n"
    assert (out / "b.conf").read_text() == "greeting = hello\n"
