#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: sparkfleet contributors
# Apache License 2.0

from __future__ import annotations

DOCUMENTATION = r"""
module: spark_ui
short_description: Read Spark's web UIs (their JSON) with the cluster's UI token
version_added: 0.1.0
description:
  - "Reads each URL of a Spark daemon's web UI (a master's or worker's C(/json/), the history server's REST API) on the
    host, sending the token the spark role keeps there (O(token_file)) as C(Authorization: Bearer), which Spark 4's
    C(JWSFilter) asks of every reader. The token never appears in the task's arguments or result."
  - With several URLs (the masters of a highly available cluster) it reads them all in one call and returns the
    answer of the one that leads (RV(leader)), so a moment when none leads is not taken for health.
  - The task fails, as M(ansible.builtin.uri) does, when no URL answers 200; RV(answers) says what each did
    (RV(status) is V(-1) for an unreachable first URL). With C(until), each attempt reads again.
  - Changes nothing.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  urls:
    description:
      - The UI URLs to read, in order (a master's C(http://<host>:8080/json/)).
    type: list
    elements: str
    required: true
    aliases: [url]
  token_file:
    description:
      - The file the spark role keeps the token in on each Spark host (C(sparkfleet_spark_ui_token_file); root and
        C(spark_users_group) read it). When the file does not exist no token is sent (Spark 3.5, whose UIs have no
        login).
    type: path
    required: true
  unit:
    description:
      - Also report this systemd unit's state (RV(unit)), so that a restarted worker whose process exits is not waited
        for.
    type: str
  timeout:
    description:
      - Seconds to wait for each URL.
    type: int
    default: 5
author:
  - sparkfleet maintainers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Read the master's view of the cluster
  sparkfleet.cluster.spark_ui:
    url: "http://{{ spark_master_host }}:8080/json/"
    token_file: "{{ sparkfleet_spark_ui_token_file }}"
  become: true
  register: master
  until: master.json.status | default('') == 'ALIVE'
  retries: 20
  delay: 3
"""

RETURN = r"""
status:
  description: The first URL's HTTP status (V(-1) when it did not answer).
  returned: always
  type: int
  sample: 200
json:
  description: The first URL's answer, parsed (V({}) when it did not answer or is not JSON).
  returned: always
  type: raw
content:
  description: The first URL's answer as text (V("") when it did not answer).
  returned: always
  type: str
answers:
  description: Each URL's C(url), C(status), C(json) and C(msg) (why it has no answer).
  returned: always
  type: list
  elements: dict
leader:
  description: The first answer whose C(status) is C(ALIVE) (the leading master), else V({}).
  returned: always
  type: dict
unit:
  description: O(unit)'s C(ActiveState), C(SubState) and C(ExecMainStatus) in systemd.
  returned: when O(unit) is given
  type: dict
  sample: {ActiveState: active, SubState: running, ExecMainStatus: "0"}
"""

import json
import urllib.error

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url


def read_token(path):
    """The token in path, or "" when there is none (no file: Spark without the UI login)."""
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip()
    except FileNotFoundError:
        return ""


def read(url, token, timeout):
    """{"url", "status", "json", "content", "msg"} for one URL."""
    try:
        with open_url(url, headers={"Authorization": f"Bearer {token}"} if token else {}, timeout=timeout) as answer:
            status, body = answer.status, answer.read()
    except urllib.error.HTTPError as error:
        status, body = error.code, error.read() or b""
    except (OSError, ValueError) as error:
        return {"url": url, "status": -1, "json": {}, "content": "", "msg": str(error)}
    text = body.decode("utf-8", "replace")
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = {}
    return {"url": url, "status": status, "json": parsed, "content": text,
            "msg": "" if status < 400 else f"HTTP {status}"}


def unit_state(module, unit):
    shown = module.run_command(["systemctl", "show", "--property", "ActiveState,SubState,ExecMainStatus", unit])[1]
    return dict(line.split("=", 1) for line in shown.splitlines() if "=" in line)


def main():
    module = AnsibleModule(
        argument_spec={
            "urls": {"type": "list", "elements": "str", "required": True, "aliases": ["url"]},
            "token_file": {"type": "path", "required": True},
            "unit": {"type": "str"},
            "timeout": {"type": "int", "default": 5},
        },
        supports_check_mode=True,
    )
    path = module.params["token_file"]
    try:
        token = read_token(path)
    except OSError as error:
        module.fail_json(msg=f"cannot read the Spark UI token {path}: {error} (run the task with become)")
    answers = [read(url, token, module.params["timeout"]) for url in module.params["urls"]]
    first = answers[0] if answers else {"status": -1, "json": {}, "content": ""}
    leader = next((a["json"] for a in answers if isinstance(a["json"], dict) and a["json"].get("status") == "ALIVE"), {})
    result = {"changed": False, "status": first["status"], "json": first["json"], "content": first["content"],
              "answers": [{k: a[k] for k in ("url", "status", "json", "msg")} for a in answers], "leader": leader}
    if module.params["unit"]:
        result["unit"] = unit_state(module, module.params["unit"])
    if not any(a["status"] == 200 for a in answers):
        module.fail_json(msg="no Spark UI answered: " + "; ".join(f"{a['url']}: {a['msg']}" for a in answers), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
