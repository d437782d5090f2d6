"""htpasswd_entry: the registry's account line, the file's own hash kept while it matches."""

import hashlib
import json

import pytest
from ansible.module_utils.testing import patch_module_args

from conftest import load_plugin

entry = load_plugin("modules", "htpasswd_entry")


class FakeBcrypt:
    """bcrypt's calls the module makes, with its salt-then-digest layout (the controller has no bcrypt)."""

    salts = iter("%022d" % n for n in range(1, 1000))

    @classmethod
    def gensalt(cls, rounds=12):
        return ("$2b$%02d$%s" % (rounds, next(cls.salts))).encode()

    @staticmethod
    def hashpw(password, salt):
        return salt[:29] + hashlib.sha256(salt[:29] + password).hexdigest()[:31].encode()

    @classmethod
    def checkpw(cls, password, hashed):
        if len(hashed) != 60:
            raise ValueError("Invalid salt")
        return cls.hashpw(password, hashed[:29]) == hashed


@pytest.fixture(autouse=True)
def fake_bcrypt(monkeypatch):
    monkeypatch.setattr(entry, "bcrypt", FakeBcrypt)
    monkeypatch.setattr(entry, "HAS_BCRYPT", True)


def run(args, capsys):
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exit_info:
            entry.main()
    return exit_info.value.code, json.loads(capsys.readouterr().out)


def test_a_new_file_gets_a_new_hash(tmp_path, capsys):
    code, result = run({"path": str(tmp_path / "htpasswd"), "name": "sparkfleet", "password": "s3cret"}, capsys)
    assert code == 0 and result["changed"] is False and result["kept"] is False
    user, hashed = result["line"].split(":", 1)
    assert user == "sparkfleet" and FakeBcrypt.checkpw(b"s3cret", hashed.encode())
    assert not (tmp_path / "htpasswd").exists(), "the module writes nothing"


def test_the_files_hash_is_kept_while_it_matches(tmp_path, capsys):
    path = tmp_path / "htpasswd"
    hashed = FakeBcrypt.hashpw(b"s3cret", FakeBcrypt.gensalt()).decode()
    path.write_text("admin:$2y$05$x\nsparkfleet:%s\n" % hashed)
    code, result = run({"path": str(path), "name": "sparkfleet", "password": "s3cret"}, capsys)
    assert result["kept"] is True and result["line"] == "sparkfleet:" + hashed


def test_a_new_password_gets_a_new_hash(tmp_path, capsys):
    path = tmp_path / "htpasswd"
    hashed = FakeBcrypt.hashpw(b"old", FakeBcrypt.gensalt()).decode()
    path.write_text("sparkfleet:%s\n" % hashed)
    code, result = run({"path": str(path), "name": "sparkfleet", "password": "new"}, capsys)
    assert result["kept"] is False and result["line"] != "sparkfleet:" + hashed
    assert FakeBcrypt.checkpw(b"new", result["line"].split(":", 1)[1].encode())


@pytest.mark.parametrize("existing", ["$apr1$abc$def", "{SHA}abc=", "$2b$12$damaged", ""])
def test_another_scheme_or_a_damaged_hash_is_replaced(existing):
    line, kept = entry.entry("sparkfleet", "pw", existing, FakeBcrypt)
    assert kept is False and FakeBcrypt.checkpw(b"pw", line.split(":", 1)[1].encode())


def test_only_the_accounts_own_line_counts():
    text = "other:$2b$12$xyz\nsparkfleetx:$2b$12$abc\n"
    assert entry.current_hash(text, "sparkfleet") is None
    assert entry.current_hash(text + "sparkfleet:$2b$12$me \n", "sparkfleet") == "$2b$12$me"


def test_a_name_with_a_colon_is_refused(tmp_path, capsys):
    code, result = run({"path": str(tmp_path / "h"), "name": "a:b", "password": "pw"}, capsys)
    assert code == 1 and "':'" in result["msg"]


def test_without_bcrypt_it_says_what_to_install(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(entry, "HAS_BCRYPT", False)
    code, result = run({"path": str(tmp_path / "h"), "name": "a", "password": "pw"}, capsys)
    assert code == 1 and "python3-bcrypt" in result["msg"]


def test_pbkdf2_lines_need_no_bcrypt_and_are_kept_while_they_match(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(entry, "HAS_BCRYPT", False)
    path = tmp_path / "passwd"
    args = {"path": str(path), "name": "prometheus", "password": "s3cret", "scheme": "pbkdf2-sha256"}
    code, first = run(args, capsys)
    assert code == 0 and first["kept"] is False
    user, hashed = first["line"].split(":", 1)
    assert user == "prometheus" and hashed.startswith("pbkdf2-sha256$%d$" % entry.PBKDF2_ITERATIONS)
    assert entry.Pbkdf2.checkpw(b"s3cret", hashed) and not entry.Pbkdf2.checkpw(b"wrong", hashed)
    # A second run draws another salt, but the file's line still matches: it is kept.
    assert run(args, capsys)[1]["line"] != first["line"]
    path.write_text(first["line"] + "\n")
    kept = run(args, capsys)[1]
    assert (kept["changed"], kept["line"], kept["kept"]) == (False, first["line"], True)
    code, changed = run({**args, "password": "new"}, capsys)
    assert changed["kept"] is False and entry.Pbkdf2.checkpw(b"new", changed["line"].split(":", 1)[1])


@pytest.mark.parametrize("existing", ["$2b$12$abc", "pbkdf2-sha256$x$abc$def", "pbkdf2-sha256$1000$!!$??", "pbkdf2-sha256$"])
def test_a_damaged_or_bcrypt_hash_is_replaced_by_a_pbkdf2_one(existing):
    line, kept = entry.pbkdf2_entry("prometheus", "pw", existing)
    assert kept is False and entry.Pbkdf2.checkpw(b"pw", line.split(":", 1)[1])


def test_a_hash_of_another_cost_is_replaced_by_one_of_the_cost_asked(tmp_path, capsys):
    path = tmp_path / "htpasswd"
    hashed = FakeBcrypt.hashpw(b"s3cret", FakeBcrypt.gensalt(12)).decode()
    path.write_text("sparkfleet:%s\n" % hashed)
    code, result = run({"path": str(path), "name": "sparkfleet", "password": "s3cret", "cost": 5}, capsys)
    assert code == 0 and result["kept"] is False
    new = result["line"].split(":", 1)[1]
    assert new.startswith("$2b$05$") and FakeBcrypt.checkpw(b"s3cret", new.encode())
    path.write_text("sparkfleet:%s\n" % new)
    code, result = run({"path": str(path), "name": "sparkfleet", "password": "s3cret", "cost": 5}, capsys)
    assert result["kept"] is True and result["line"] == "sparkfleet:" + new


@pytest.mark.parametrize("cost", [3, 32])
def test_a_cost_bcrypt_does_not_take_is_refused(tmp_path, capsys, cost):
    code, result = run({"path": str(tmp_path / "htpasswd"), "name": "sparkfleet", "password": "pw", "cost": cost}, capsys)
    assert code == 1 and "4 to 31" in result["msg"]
