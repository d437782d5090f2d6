"""Facts are read only under ansible_facts: ansible.cfg and the Molecule base configuration set
inject_facts_as_vars = False (Ansible then copies and scans a host's facts once less for every task),
so a role, playbook or template that read a fact by its top-level name (ansible_hostname,
ansible_default_ipv4, ...) would find it undefined there, and in a user's configuration with the
default it would read a name ansible-core deprecates."""

import configparser
import pathlib
import re

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
# Names that are not facts: connection and become settings, magic variables, results, and the
# local facts (which Ansible puts at the top level whatever the setting).
NOT_FACTS = {
    "ansible_facts", "ansible_local", "ansible_managed", "ansible_port", "ansible_connection",
    "ansible_host", "ansible_user", "ansible_python_interpreter", "ansible_ssh_common_args",
    "ansible_ssh_private_key_file", "ansible_ssh_retries", "ansible_ssh_extra_args", "ansible_timeout",
    "ansible_become", "ansible_become_method", "ansible_become_user", "ansible_play_hosts",
    "ansible_play_hosts_all", "ansible_play_batch", "ansible_check_mode", "ansible_diff_mode",
    "ansible_playbook_python", "ansible_failed_result", "ansible_failed_task", "ansible_job_id",
    "ansible_parent_role_paths", "ansible_parent_role_names", "ansible_role_name",
    "ansible_inventory_sources", "ansible_config_file", "ansible_run_tags", "ansible_skip_tags",
    "ansible_limit", "ansible_loop", "ansible_loop_var", "ansible_index_var", "ansible_version",
    "ansible_forks", "ansible_verbosity", "ansible_search_path", "ansible_collection_name",
    "ansible_async_dir", "ansible_mitogen",
}
# Words that only look like variables: Python packages and paths (ansible_collections/...,
# ansible_runner, ansible_mitogen, ansible_test).
NOT_VARIABLES = {"ansible_collections", "ansible_runner", "ansible_test", "ansible_mitogen"}
SOURCES = ("roles", "playbooks", "molecule", "inventories", "tests/lab", "site.yml")


def _files():
    for source in SOURCES:
        path = ROOT / source
        for f in [path] if path.is_file() else sorted(path.rglob("*")):
            if f.suffix in (".yml", ".yaml", ".j2", ".cfg", ".ini") and f.is_file():
                yield f


def test_no_fact_is_read_by_its_top_level_name():
    found = {}
    for f in _files():
        for name in re.findall(r"\bansible_[a-z0-9_]+", f.read_text()):
            if name not in NOT_FACTS | NOT_VARIABLES:
                found.setdefault(name, []).append(str(f.relative_to(ROOT)))
    assert not found, f"read these under ansible_facts[...] instead: {found}"


def test_the_project_and_molecule_do_not_inject_facts_as_variables():
    cfg = configparser.ConfigParser(interpolation=None)
    cfg.read(ROOT / "ansible.cfg")
    assert cfg.getboolean("defaults", "inject_facts_as_vars") is False
    molecule = yaml.safe_load((ROOT / ".config" / "molecule" / "config.yml").read_text())
    assert molecule["provisioner"]["config_options"]["defaults"]["inject_facts_as_vars"] is False
