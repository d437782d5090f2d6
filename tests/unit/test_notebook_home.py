"""The jupyterhub role's home helper (roles/jupyterhub/files/notebook_home.py, which the command
sparkfleet-notebook-home runs), against a temporary home root: names it refuses, a link or a file where a home belongs, a home created once and found again.
The owner is this test's own uid and gid, so it runs as any user; as root (whom the helper refuses as a
home's owner) it is the notebook user's uid and gid, 1000."""

import importlib.util
import os
import pathlib
import stat
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
FILES = ROOT / "roles" / "jupyterhub" / "files"
HELPER = FILES / "notebook_home.py"


def _load():
    spec = importlib.util.spec_from_file_location("sparkfleet_notebook_home", HELPER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


helper = _load()
OWNER = (os.getuid(), os.getgid()) if os.getuid() != 0 else (1000, 1000)


@pytest.fixture()
def home_root(tmp_path):
    root = tmp_path / "home"
    root.mkdir(mode=0o711)
    return root


def _config(tmp_path, root, uid=OWNER[0], gid=OWNER[1]):
    config = tmp_path / "notebook-home.conf"
    config.write_text(f"# test\nroot = {root}\nuid = {uid}\ngid = {gid}\n")
    config.chmod(0o644)
    return str(config)


@pytest.mark.parametrize("name", ["../x", "a/b", ".x", "-x", "", "..", "a..b", "x y", "al ice", "a\nb", "é", "a" * 65,
                                  "--config=/tmp/x"])
def test_refused_names(tmp_path, home_root, capsys, name):
    assert helper.main([name], config=_config(tmp_path, home_root)) == 2
    assert "refused user name" in capsys.readouterr().err
    assert list(home_root.iterdir()) == []


def test_one_argument_only(tmp_path, home_root):
    config = _config(tmp_path, home_root)
    assert helper.main([], config=config) == 2
    assert helper.main(["alice", "bob"], config=config) == 2
    assert list(home_root.iterdir()) == []


def test_creates_a_private_home_and_finds_it_again(tmp_path, home_root, capsys):
    config = _config(tmp_path, home_root)
    assert helper.main(["alice"], config=config) == 0
    assert capsys.readouterr().out.strip() == f"{home_root}/alice created"
    home = home_root / "alice"
    info = home.lstat()
    assert stat.S_ISDIR(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o700
    assert (info.st_uid, info.st_gid) == OWNER
    # The user's work stays as it is; a second start finds the home.
    (home / "keep-me.txt").write_text("work")
    (home / "keep-me.txt").chmod(0o640)
    assert helper.main(["alice"], config=config) == 0
    assert capsys.readouterr().out.strip() == f"{home_root}/alice exists"
    assert (home / "keep-me.txt").read_text() == "work"
    assert stat.S_IMODE((home / "keep-me.txt").stat().st_mode) == 0o640


def test_an_existing_home_gets_its_mode_back_on_itself_only(tmp_path, home_root):
    home = home_root / "mae.smith"
    (home / "project").mkdir(parents=True)
    home.chmod(0o755)
    (home / "project").chmod(0o755)
    assert helper.main(["mae.smith"], config=_config(tmp_path, home_root)) == 0
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert stat.S_IMODE((home / "project").stat().st_mode) == 0o755


@pytest.mark.parametrize("kind", ["link to a directory", "dangling link", "file"])
def test_refuses_what_is_not_a_real_directory(tmp_path, home_root, capsys, kind):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o755)
    target = home_root / "alice"
    if kind == "link to a directory":
        target.symlink_to(elsewhere)
    elif kind == "dangling link":
        target.symlink_to(tmp_path / "missing")
    else:
        target.write_text("not a home")
    assert helper.main(["alice"], config=_config(tmp_path, home_root)) == 2
    assert "exists and is not a real directory" in capsys.readouterr().err
    # Nothing was followed: the link's target keeps its mode and gets no new entry.
    assert stat.S_IMODE(elsewhere.stat().st_mode) == 0o755 and list(elsewhere.iterdir()) == []
    assert not (tmp_path / "missing").exists()


def test_a_missing_root_or_bad_settings_fail(tmp_path, capsys):
    assert helper.main(["alice"], config=_config(tmp_path, tmp_path / "no-such-root")) == 1
    assert "No such file or directory" in capsys.readouterr().err
    config = tmp_path / "bad.conf"
    config.write_text("root = relative/path\nuid = 1000\ngid = 1000\n")
    assert helper.main(["alice"], config=str(config)) == 1
    config.write_text(f"root = {tmp_path}\nuid = 0\ngid = 0\n")
    assert helper.main(["alice"], config=str(config)) == 1
    assert list(tmp_path.glob("alice")) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another uid and root's checks of the settings file need root")
def test_as_root_settings_another_user_could_write_are_not_trusted(tmp_path, home_root):
    config = _config(tmp_path, home_root)
    os.chmod(config, 0o666)
    assert helper.main(["bob"], config=config) == 2
    assert not (home_root / "bob").exists()


def test_runs_as_a_command_in_isolated_mode():
    """As the installed command runs it (python3 -I), with the caller's arguments."""
    result = subprocess.run([sys.executable, "-I", str(HELPER), "../x"], capture_output=True, text=True, check=False)
    assert result.returncode == 2 and "refused user name" in result.stderr
    result = subprocess.run([sys.executable, "-I", str(HELPER), "alice", "bob"], capture_output=True, text=True, check=False)
    assert result.returncode == 2 and "usage: sparkfleet-notebook-home NAME" in result.stderr
