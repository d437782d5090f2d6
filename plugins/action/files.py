# -*- coding: utf-8 -*-
# Copyright: sparkfleet contributors
# Apache License 2.0
"""A role's files in one module call: templates rendered and role files read on the controller.

Documented in plugins/modules/files.py. Ansible's template and copy cost two module calls per file
on the host (the checksum, then the write or the attributes): a role's dozen files cost two dozen
module starts, each about 0.14 s of the host's CPU (bench/figures.md). Here the controller renders
every entry first and the host gets them all in one call.
"""

from __future__ import annotations

from ansible.errors import AnsibleActionFail, AnsibleError
from ansible.module_utils.common.text.converters import to_native, to_text
from ansible.plugins.action import ActionBase
from ansible.template import trust_as_template
from ansible._internal._templating import _template_vars

MODULE = "sparkfleet.cluster.files"
KEYS = {"path", "state", "content", "template", "vars", "src", "link", "owner", "group", "mode", "backup", "validate",
        "force"}


class ActionModule(ActionBase):

    TRANSFERS_FILES = False

    def _render(self, name, dest, task_vars, extra):
        """The role template `name` rendered as ansible.builtin.template renders it (the same search
        path, template variables and trim_blocks), so a task can move here without its output
        changing."""
        try:
            source = self._find_needle("templates", name)
        except AnsibleError as err:
            raise AnsibleActionFail("files: %s: %s" % (dest, to_text(err))) from err
        data = trust_as_template(self._loader.get_text_file_contents(source))
        searchpath = list(task_vars.get("ansible_search_path", [])) + [self._loader._basedir, source.rsplit("/", 1)[0]]
        searchpath = [p for base in searchpath for p in (base + "/templates", base)]
        variables = task_vars.copy()
        variables.update(extra or {})
        variables.update(_template_vars.generate_ansible_template_vars(
            path=name, fullpath=source, dest_path=dest, include_ansible_managed="ansible_managed" not in variables))
        templar = self._templar.copy_with_new_env(searchpath=searchpath, available_variables=variables)
        rendered = templar.template(data, escape_backslashes=False,
                                    overrides={"trim_blocks": True, "lstrip_blocks": False, "newline_sequence": "\n"})
        return "" if rendered is None else to_text(rendered)

    def _read(self, name, dest):
        try:
            source = self._find_needle("files", name)
            return self._loader.get_text_file_contents(source)
        except (AnsibleError, UnicodeDecodeError) as err:
            raise AnsibleActionFail("files: %s: %s (text files only: ansible.builtin.copy takes the others)"
                                    % (dest, to_native(err))) from err

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars or {})
        del tmp
        task_vars = task_vars or {}
        entries = self._task.args.get("files")
        if set(self._task.args) != {"files"} or not isinstance(entries, list):
            raise AnsibleActionFail("files: give one argument, files: a list of entries")
        sent = []
        for index, entry in enumerate(entries):
            if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
                raise AnsibleActionFail("files: entry %d needs a path" % index)
            unknown = set(entry) - KEYS
            sources = [key for key in ("content", "template", "src") if entry.get(key) is not None]
            if unknown or len(sources) > 1:
                raise AnsibleActionFail("files: %s: %s" % (entry["path"], (
                    "unknown keys %s" % ", ".join(sorted(unknown)) if unknown
                    else "give one of content, template or src, not %s" % " and ".join(sources))))
            entry = dict(entry)
            extra = entry.pop("vars", None)
            if extra is not None and (not isinstance(extra, dict) or entry.get("template") is None):
                raise AnsibleActionFail("files: %s: vars is a mapping, for a template" % entry["path"])
            if entry.get("template") is not None:
                entry["content"] = self._render(entry.pop("template"), entry["path"], task_vars, extra)
            elif entry.get("src") is not None:
                entry["content"] = self._read(entry.pop("src"), entry["path"])
            sent.append(entry)
        result.update(self._execute_module(module_name=MODULE, module_args={"files": sent}, task_vars=task_vars))
        return result
