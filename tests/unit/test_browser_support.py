"""The browser tests' pure decisions (tests/support): skip or fail when no browser can run, and how
browser_jupyterlab.py reads a form, a cell's output and a saved notebook."""

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "support"))

import browser_jupyterlab as lab  # noqa: E402
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
    monkeypatch.setenv("CI", "false")
    assert lab.main(argv) == headless_chromium.SKIP
    assert "SKIP: selenium is not installed" in capsys.readouterr().out


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
