"""secret_file_info: a kept secret, its file's and directory's owner and mode, in one read-only call."""

import base64
import json
import os

import pytest
from ansible.module_utils.testing import patch_module_args

from conftest import load_plugin

info = load_plugin("modules", "secret_file_info")


def run(args, capsys):
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            info.main()
    return json.loads(capsys.readouterr().out)


def test_reads_the_content_and_both_modes(tmp_path, capsys):
    store = tmp_path / "secrets"
    store.mkdir(mode=0o700)
    os.chmod(store, 0o700)
    secret = store / "spark_auth_secret"
    secret.write_bytes(b"s3cret\n")
    os.chmod(secret, 0o640)

    result = run({"path": str(secret)}, capsys)

    assert result["changed"] is False
    assert result["exists"] is True and result["dir_exists"] is True
    assert base64.b64decode(result["content"]) == b"s3cret\n"
    assert result["mode"] == "0640" and result["dir_mode"] == "0700"
    assert result["uid"] == os.getuid() and result["dir_uid"] == os.getuid()
    assert result["gid"] == os.getgid() and result["dir_gid"] == os.getgid()
    assert not any(key.startswith("_") for key in result)


def test_a_missing_file_is_not_an_error(tmp_path, capsys):
    result = run({"path": str(tmp_path / "nothing")}, capsys)
    assert result.get("failed") is not True
    assert result["exists"] is False and "content" not in result and "mode" not in result
    assert result["dir_exists"] is True


def test_a_missing_directory_is_not_an_error(tmp_path, capsys):
    result = run({"path": str(tmp_path / "store" / "nothing")}, capsys)
    assert result["exists"] is False and result["dir_exists"] is False
    assert "dir_mode" not in result


def test_a_directory_in_place_of_the_file_does_not_exist_as_a_secret(tmp_path, capsys):
    (tmp_path / "secret").mkdir()
    result = run({"path": str(tmp_path / "secret")}, capsys)
    assert result["exists"] is False and "content" not in result
