"""docker_daemon_config: the one daemon.json merge the Docker and NVIDIA roles share."""

import json
import os
import stat

import pytest
from ansible.module_utils.testing import patch_module_args

from conftest import load_plugin

daemon = load_plugin("modules", "docker_daemon_config")

ADMIN = {
    "log-driver": "journald",
    "insecure-registries": ["hub.internal:5000"],
    "runtimes": {"crun": {"path": "/usr/bin/crun"}},
    "features": {"buildkit": True},
}
NVIDIA = {
    "default-runtime": "nvidia",
    "runtimes": {"nvidia": {"path": "nvidia-container-runtime", "runtimeArgs": []}},
    "node-generic-resources": ["NVIDIA-GPU=GPU-ABCD", "NVIDIA-GPU=GPU-ABCD-2"],
}


def run(args, capsys):
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exit_info:
            daemon.main()
    return exit_info.value.code, json.loads(capsys.readouterr().out)


@pytest.fixture
def daemon_json(tmp_path):
    path = tmp_path / "docker" / "daemon.json"
    path.parent.mkdir()
    path.write_text(json.dumps(ADMIN, indent=4))
    return path


def read(path):
    return json.loads(path.read_text())


def test_keeps_an_administrators_keys_and_merges_runtimes(daemon_json, capsys):
    code, result = run({"path": str(daemon_json), "settings": NVIDIA}, capsys)
    assert code == 0 and result["changed"] is True
    config = read(daemon_json)
    assert config["log-driver"] == "journald"
    assert config["insecure-registries"] == ["hub.internal:5000"]
    assert config["features"] == {"buildkit": True}
    assert config["runtimes"] == {"crun": {"path": "/usr/bin/crun"},
                                  "nvidia": {"path": "nvidia-container-runtime", "runtimeArgs": []}}
    assert config["default-runtime"] == "nvidia"
    assert result["config"] == config
    assert list(config)[:4] == list(ADMIN), "the file's own keys keep their order"
    assert stat.S_IMODE(os.stat(daemon_json).st_mode) == 0o644
    assert daemon_json.read_text().endswith("}\n")


def test_second_run_changes_nothing(daemon_json, capsys):
    run({"path": str(daemon_json), "settings": NVIDIA}, capsys)
    before = daemon_json.stat().st_mtime_ns, daemon_json.read_text()
    code, result = run({"path": str(daemon_json), "settings": NVIDIA, "_ansible_diff": True}, capsys)
    assert code == 0 and result["changed"] is False and "diff" not in result
    assert (daemon_json.stat().st_mtime_ns, daemon_json.read_text()) == before


def test_formatting_alone_is_no_change(daemon_json, capsys):
    # Parsed JSON is compared, not text: a file laid out differently is left alone.
    daemon_json.write_text(json.dumps(dict(reversed(list(ADMIN.items()))), separators=(",", ":")))
    text = daemon_json.read_text()
    code, result = run({"path": str(daemon_json), "settings": {"log-driver": "journald"}}, capsys)
    assert result["changed"] is False and daemon_json.read_text() == text


def test_json_types_are_compared_strictly(tmp_path, capsys):
    path = tmp_path / "daemon.json"
    path.write_text('{"debug": 1}')
    code, result = run({"path": str(path), "settings": {"debug": True}}, capsys)
    assert result["changed"] is True and read(path) == {"debug": True}


def test_lists_are_replaced_not_appended(daemon_json, capsys):
    run({"path": str(daemon_json), "settings": NVIDIA}, capsys)
    fewer = ["NVIDIA-GPU=GPU-ABCD"]
    code, result = run({"path": str(daemon_json), "settings": {"node-generic-resources": fewer}}, capsys)
    assert result["changed"] is True and read(daemon_json)["node-generic-resources"] == fewer


def test_nested_dicts_merge_at_every_level(tmp_path, capsys):
    path = tmp_path / "daemon.json"
    path.write_text(json.dumps({"log-opts": {"max-size": "10m", "max-file": "3"}}))
    run({"path": str(path), "settings": {"log-opts": {"max-size": "50m", "compress": "true"}}}, capsys)
    assert read(path) == {"log-opts": {"max-size": "50m", "max-file": "3", "compress": "true"}}


def test_check_mode_writes_nothing(daemon_json, capsys):
    text = daemon_json.read_text()
    code, result = run({"path": str(daemon_json), "settings": NVIDIA, "_ansible_check_mode": True,
                        "_ansible_diff": True}, capsys)
    assert code == 0 and result["changed"] is True
    assert daemon_json.read_text() == text
    assert result["config"]["default-runtime"] == "nvidia"
    assert '"default-runtime": "nvidia"' in result["diff"]["after"]
    assert '"default-runtime"' not in result["diff"]["before"]
    assert sorted(os.listdir(daemon_json.parent)) == ["daemon.json"], "no temporary file left behind"


def test_check_mode_creates_no_file(tmp_path, capsys):
    path = tmp_path / "etc" / "docker" / "daemon.json"
    code, result = run({"path": str(path), "settings": NVIDIA, "_ansible_check_mode": True}, capsys)
    assert result["changed"] is True and not path.parent.exists()


def test_diff_shows_before_and_after(daemon_json, capsys):
    code, result = run({"path": str(daemon_json), "settings": {"log-driver": "json-file"}, "_ansible_diff": True}, capsys)
    diff = result["diff"]
    assert diff["before_header"] == diff["after_header"] == str(daemon_json)
    assert json.loads(diff["before"]) == ADMIN
    assert json.loads(diff["after"]) == dict(ADMIN, **{"log-driver": "json-file"})


@pytest.mark.parametrize("content", ["{not json", '{"a": 1,}', "[1, 2]", '"text"'])
def test_invalid_json_is_refused_and_left_untouched(tmp_path, capsys, content):
    path = tmp_path / "daemon.json"
    path.write_text(content)
    code, result = run({"path": str(path), "settings": NVIDIA}, capsys)
    assert code == 1 and result["failed"] is True
    assert str(path) in result["msg"] and "left as it is" in result["msg"]
    assert path.read_text() == content
    assert os.listdir(tmp_path) == ["daemon.json"]


@pytest.mark.parametrize("content", [None, "", "  \n"])
def test_missing_or_empty_file_is_an_empty_object(tmp_path, capsys, content):
    path = tmp_path / "etc" / "docker" / "daemon.json"
    if content is not None:
        path.parent.mkdir(parents=True)
        path.write_text(content)
    code, result = run({"path": str(path), "settings": NVIDIA}, capsys)
    assert code == 0 and result["changed"] is True
    assert read(path) == NVIDIA
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644


def test_nothing_to_do_on_a_missing_file_creates_nothing(tmp_path, capsys):
    path = tmp_path / "daemon.json"
    code, result = run({"path": str(path), "remove_keys": ["default-runtime"]}, capsys)
    assert result["changed"] is False and result["config"] == {} and not path.exists()


def test_mode_is_0644_even_when_the_file_was_not(daemon_json, capsys):
    daemon_json.chmod(0o600)
    run({"path": str(daemon_json), "settings": NVIDIA}, capsys)
    assert stat.S_IMODE(os.stat(daemon_json).st_mode) == 0o644


def test_remove_keys_top_level_and_dotted(daemon_json, capsys):
    run({"path": str(daemon_json), "settings": NVIDIA}, capsys)
    code, result = run({"path": str(daemon_json),
                        "remove_keys": ["default-runtime", "runtimes.nvidia", "node-generic-resources", "no.such.key"]},
                       capsys)
    assert result["changed"] is True
    assert read(daemon_json) == ADMIN
    code, result = run({"path": str(daemon_json), "remove_keys": ["default-runtime", "runtimes.nvidia"]}, capsys)
    assert result["changed"] is False


def test_a_key_with_a_dot_is_removed_as_it_is(tmp_path, capsys):
    path = tmp_path / "daemon.json"
    path.write_text(json.dumps({"com.example.setting": 1, "com": {"example": 2}}))
    run({"path": str(path), "remove_keys": ["com.example.setting"]}, capsys)
    assert read(path) == {"com": {"example": 2}}


def test_a_key_both_set_and_removed_is_refused(daemon_json, capsys):
    text = daemon_json.read_text()
    code, result = run({"path": str(daemon_json), "settings": NVIDIA, "remove_keys": ["runtimes.nvidia"]}, capsys)
    assert code == 1 and "runtimes.nvidia" in result["msg"]
    assert daemon_json.read_text() == text


def test_backup(daemon_json, capsys):
    code, result = run({"path": str(daemon_json), "settings": NVIDIA, "backup": True}, capsys)
    backup = result["backup_file"]
    assert json.loads(open(backup).read()) == ADMIN
    code, result = run({"path": str(daemon_json), "settings": NVIDIA, "backup": True}, capsys)
    assert result["changed"] is False and "backup_file" not in result


def test_a_backup_is_what_the_service_role_puts_back(daemon_json, capsys):
    # service_revert_files: copy src=backup_file dest=dest (remote_src), mode preserved.
    code, result = run({"path": str(daemon_json), "settings": NVIDIA, "backup": True}, capsys)
    assert code == 0 and result["changed"] is True
    assert result["dest"] == result["path"] == str(daemon_json)
    assert os.path.dirname(result["backup_file"]) == str(daemon_json.parent)
    assert stat.S_IMODE(os.stat(result["backup_file"]).st_mode) == stat.S_IMODE(os.stat(daemon_json).st_mode)


def test_no_backup_of_a_missing_file_nor_without_a_change(tmp_path, capsys):
    path = tmp_path / "docker" / "daemon.json"
    code, result = run({"path": str(path), "settings": NVIDIA, "backup": True}, capsys)
    assert code == 0 and result["changed"] is True and "backup_file" not in result
    assert result["dest"] == str(path)
    code, result = run({"path": str(path), "settings": NVIDIA, "backup": True}, capsys)
    assert result["changed"] is False and "backup_file" not in result


def test_no_backup_in_check_mode(daemon_json, capsys):
    code, result = run({"path": str(daemon_json), "settings": NVIDIA, "backup": True, "_ansible_check_mode": True},
                       capsys)
    assert code == 0 and result["changed"] is True and "backup_file" not in result
    assert sorted(p.name for p in daemon_json.parent.iterdir()) == ["daemon.json"]


def test_a_directory_is_refused(tmp_path, capsys):
    code, result = run({"path": str(tmp_path), "settings": NVIDIA}, capsys)
    assert code == 1 and "is a directory" in result["msg"]


def test_merge_functions():
    assert daemon.deep_merge({"a": {"b": 1, "c": [1]}}, {"a": {"c": [2], "d": None}}) == {"a": {"b": 1, "c": [2], "d": None}}
    assert daemon.deep_merge({"a": {"b": 1}}, {"a": "flat"}) == {"a": "flat"}
    base = {"a": {"b": 1}}
    daemon.deep_merge(base, {"a": {"b": 2}})
    assert base == {"a": {"b": 1}}, "the input is not changed"
    assert sorted(daemon.key_paths({"a": {"b": {"c": 1}}, "d": 2})) == ["a", "a.b", "a.b.c", "d"]
