"""The browser tests' pure decisions (tests/support): skip or fail when no browser can run (and the
steps of the scenario and the lab test that run them fail, not skip, under CI=true), and how
browser_jupyterlab.py reads a form, a cell's output and a saved notebook."""

import importlib.util
import sys

import pytest
import yaml

from conftest import ROOT, RoleRenderer

sys.path.insert(0, str(ROOT / "tests" / "support"))

import browser_jupyterlab as lab  # noqa: E402
import browser_spark_ui as spark_ui  # noqa: E402
import headless_chromium  # noqa: E402


@pytest.mark.parametrize("environ, code", [
    ({}, headless_chromium.SKIP),
    ({"CI": "false"}, headless_chromium.SKIP),
    ({"CI": ""}, headless_chromium.SKIP),
    ({"CI": "true"}, 1),
    ({"CI": "True"}, 1),
])
def test_a_missing_browser_skips_except_under_ci(environ, code):
    got, line = headless_chromium.unavailable("/usr/bin/chromium is missing", environ)
    assert got == code
    assert line.startswith("SKIP: " if code == headless_chromium.SKIP else "FAIL: ")
    assert "/usr/bin/chromium is missing" in line


def test_the_script_fails_under_ci_without_selenium(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(lab, "start", lambda *_args: (None, "selenium is not installed"))
    argv = ["--base", "http://127.0.0.1:1", "--no-login", "--screenshot", str(tmp_path / "s.png")]
    monkeypatch.setenv("CI", "true")
    assert lab.main(argv) == 1
    assert capsys.readouterr().out.startswith("FAIL: selenium is not installed")
    monkeypatch.setenv("CI", "false")
    assert lab.main(argv) == headless_chromium.SKIP
    assert "SKIP: selenium is not installed" in capsys.readouterr().out


# --- No Chromium: what the scripts answer, and what the steps that run them make of it ----------

MISSING = "/nonexistent/chromium"


def _why_not():
    """What start() says here for a Chromium that is not installed (selenium is checked first)."""
    if importlib.util.find_spec("selenium") is None:
        return "selenium is not installed"
    return f"{MISSING} is missing (apt-get install chromium chromium-driver)"


def _run_without_chromium(script, ci, monkeypatch, capsys, tmp_path):
    """Run a browser script (its real start()) where Chromium is missing; CI=ci (None: unset)."""
    monkeypatch.setattr(headless_chromium, "wait_for_apt", lambda seconds=600: None)  # no install to wait for
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    browser = ["--chromium", MISSING, "--chromedriver", "/nonexistent/chromedriver", "--screenshot", str(tmp_path / "s.png")]
    if script == "browser_jupyterlab.py":
        rc = lab.main(["--base", "http://127.0.0.1:1", "--no-login", *browser])
    else:
        monkeypatch.setattr(sys, "argv", [script, "--base", "https://127.0.0.1:1/spark/", "--cert", str(tmp_path / "c.pem"),
                                          "--credentials", str(tmp_path / "cred"), "--workers", "w1", *browser])
        rc = spark_ui.main()
    out = capsys.readouterr().out
    return {"rc": rc, "stdout": out, "stdout_lines": out.splitlines(), "stderr": ""}


SCRIPTS = ["browser_jupyterlab.py", "browser_spark_ui.py"]


@pytest.mark.parametrize("script", SCRIPTS)
@pytest.mark.parametrize("ci", ["true", "TRUE"])
def test_without_chromium_a_browser_script_fails_under_ci(script, ci, monkeypatch, capsys, tmp_path):
    result = _run_without_chromium(script, ci, monkeypatch, capsys, tmp_path)
    assert result["rc"] == 1
    (line,) = result["stdout_lines"]
    assert line.startswith(f"FAIL: {_why_not()}") and "CI=true" in line


@pytest.mark.parametrize("script", SCRIPTS)
@pytest.mark.parametrize("ci", [None, "false", ""])
def test_without_chromium_a_browser_script_skips_locally_and_says_why(script, ci, monkeypatch, capsys, tmp_path):
    result = _run_without_chromium(script, ci, monkeypatch, capsys, tmp_path)
    assert result["rc"] == headless_chromium.SKIP
    assert result["stdout_lines"] == [f"SKIP: {_why_not()}"]


def _task(path, name):
    plays = yaml.safe_load(path.read_text())
    for play in plays:
        for task in play.get("tasks", []):
            if task.get("name") == name:
                return play, play["tasks"]
    raise AssertionError(f"{path}: no task {name!r}")


def test_the_scenarios_browser_step_fails_under_ci_without_chromium(monkeypatch, capsys, tmp_path):
    """molecule/spark_cluster/verify_gateway.yml: the step's failed_when and message, given what
    browser_spark_ui.py answered."""
    _play, tasks = _task(ROOT / "molecule" / "spark_cluster" / "verify_gateway.yml",
                         "Verify gateway | Drive headless Chromium to the master's UI through the gateway.")
    step = next(t for t in tasks if t["name"] == "Verify gateway | Drive headless Chromium to the master's UI through the gateway.")
    say = next(t for t in tasks if t["name"].startswith("Verify gateway | Say what the browser did"))

    def judged(ci):
        browser = _run_without_chromium("browser_spark_ui.py", ci, monkeypatch, capsys, tmp_path)
        renderer = RoleRenderer(extra={"browser": browser, "chromium_install": {"failed": False, "msg": ""}})
        return renderer.value(step["failed_when"]), renderer.string(say["ansible.builtin.debug"]["msg"])

    failed, shown = judged("true")
    assert failed is True
    assert shown[0].startswith(f"FAIL: {_why_not()}")
    failed, shown = judged(None)
    assert failed is False
    assert shown == [f"SKIP: {_why_not()}", "SKIPPED: the browser step did not run"]


def test_the_lab_tests_browser_step_fails_under_ci_without_chromium(monkeypatch, capsys, tmp_path):
    """tests/lab/hub_browser.yml: the step runs with failed_when false, then its judgement (an assert)
    and its message, given what browser_jupyterlab.py answered."""
    play, tasks = _task(ROOT / "tests" / "lab" / "hub_browser.yml",
                        "Verify | The browser ran, or could not run here outside CI.")
    judge = next(t for t in tasks if t["name"] == "Verify | The browser ran, or could not run here outside CI.")
    say = next(t for t in tasks if t["name"].startswith("Verify | Say what the browser did"))

    def judged(ci, browser=None):
        browser = browser or _run_without_chromium("browser_jupyterlab.py", ci, monkeypatch, capsys, tmp_path)
        renderer = RoleRenderer(extra={**play["vars"], "browser": browser})
        conditions = judge["ansible.builtin.assert"]["that"]
        passed = all(renderer.value(c) for c in ([conditions] if isinstance(conditions, str) else conditions))
        return passed, renderer.string(say["ansible.builtin.debug"]["msg"])

    passed, shown = judged("true")
    assert passed is False
    assert shown[0].startswith(f"FAIL: {_why_not()}")
    passed, shown = judged(None)
    assert passed is True
    assert shown == [f"SKIP: {_why_not()}", "SKIPPED: the browser step did not run"]
    # Even a skip (77) does not pass under CI.
    monkeypatch.setenv("CI", "true")
    assert judged("true", {"rc": 77, "stdout": "SKIP: x", "stdout_lines": ["SKIP: x"], "stderr": ""})[0] is False


@pytest.mark.parametrize("value, label, own, name, matches", [
    ("spark-gpu", "Spark cluster\n4 cores, 1 GPU", "", "Spark cluster", True),
    ("spark-gpu", "Spark cluster 4 cores, 1 GPU", "Spark cluster ", "Spark cluster", True),
    ("spark-gpu", "", "", "spark-gpu", True),
    (" python ", "Python only", "", "python", True),
    ("python", "Python only", "", "Spark cluster", False),
    ("spark", "Spark cluster 4 cores", "", "Spark", False),
])
def test_a_profile_is_its_value_or_its_label(value, label, own, name, matches):
    assert lab.option_matches(name, value, label, own) is matches


def test_code_lines_are_the_file_without_its_trailing_newlines():
    assert lab.code_lines("a = 1\n\nif a:\n    print(a)\n\n") == ["a = 1", "", "if a:", "    print(a)"]
    with pytest.raises(ValueError, match="tab"):
        lab.code_lines("if a:\n\tprint(a)\n")
    with pytest.raises(ValueError, match="empty"):
        lab.code_lines("\n")


def test_the_expected_line_and_errors_in_a_cell_output():
    output = "25/11/28 WARN NativeCodeLoader: no native library\nRESULT [(0, 71071)]\n"
    assert lab.expected_line(output, "RESULT") == "RESULT [(0, 71071)]"
    assert lab.expected_line(output, "MISSING") is None
    assert not lab.has_traceback(output)
    assert lab.has_traceback("ZeroDivisionError      Traceback (most recent call last)\n----> 2 print('RESULT')")
    assert lab.has_traceback("  Cell In[2], line 1\n    print(x y)\nSyntaxError: invalid syntax")
    assert not lab.has_traceback("Errors: none")


def test_the_saved_notebook_text_and_a_tab_path():
    model = {"content": {"cells": [
        {"cell_type": "code", "outputs": [
            {"output_type": "stream", "name": "stdout", "text": ["RESULT ", "[1]\n"]},
            {"output_type": "execute_result", "data": {"text/plain": ["42"]}},
        ]},
        {"cell_type": "markdown"},
    ]}}
    assert lab.saved_outputs_text(model) == "RESULT [1]\n\n42"
    assert lab.tab_path("Name: x.ipynb\nPath: work/x.ipynb\nLast Saved: now") == "work/x.ipynb"
    assert lab.tab_path(None) is None


@pytest.mark.parametrize("argv, message", [
    (["--notebook", "x.ipynb"], "go together"),
    (["--notebook", "x.py", "--kernel", "k", "--code-file", "c", "--expect", "e"], "ending in .ipynb"),
    (["--profile", "p"], "needs the hub's login"),
])
def test_options_that_do_not_fit_together_are_refused(argv, message, capsys):
    with pytest.raises(SystemExit):
        lab.parse(["--base", "http://x", "--no-login", "--screenshot", "s.png"] + argv)
    assert message in capsys.readouterr().err


def test_the_hub_needs_its_login_and_certificate(capsys):
    with pytest.raises(SystemExit):
        lab.parse(["--base", "https://x", "--user", "alice", "--password", "pw", "--screenshot", "s.png"])
    assert "--cert" in capsys.readouterr().err
