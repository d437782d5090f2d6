"""The service role's units: rendered ones and those a package ships (packaged: true), as the
role's vars/main.yml sorts them (what is rendered, removed, or only stopped and disabled)."""

import pytest

from conftest import RoleRenderer, load_plugin

service_unit_files = load_plugin("filter", "service_batches").service_unit_files

SPARK = {"name": "spark-worker", "description": "Spark worker", "exec_start": "/opt/spark/sbin/w", "wanted": True}
OLD = {"name": "spark-history", "description": "history", "exec_start": "/opt/spark/sbin/h", "wanted": False}
DOCKER = {"name": "docker", "wanted": True, "packaged": True}
REGISTRY = {"name": "docker-registry", "wanted": False, "packaged": True}
# Written out, as a caller could: the same as leaving the key out.
RENDERED = {"name": "livy-server", "description": "Livy", "exec_start": "/opt/livy/bin/livy-server", "wanted": False,
            "packaged": False}


def _value(expression, units):
    return RoleRenderer("service", extra={"service_units": units}).value(expression)


@pytest.mark.parametrize("units", [[SPARK, OLD], [SPARK, OLD, DOCKER, REGISTRY, RENDERED]])
def test_units_without_the_key_are_rendered(units):
    names = [u["name"] for u in _value("__service_rendered_units", units)]
    assert names == [u["name"] for u in units if not u.get("packaged")]


def test_packaged_units_are_not_rendered():
    units = [SPARK, OLD, DOCKER, REGISTRY, RENDERED]
    assert _value("__service_packaged_names", units) == ["docker", "docker-registry"]
    assert _value("__service_rendered_units | selectattr('wanted') | map(attribute='name') | list", units) == [
        "spark-worker"]


def test_unwanted_rendered_units_are_removed_packaged_ones_only_stopped():
    units = [SPARK, OLD, DOCKER, REGISTRY, RENDERED]
    assert _value("__service_unwanted_rendered_names", units) == ["spark-history", "livy-server"]
    assert _value("__service_unwanted_packaged_names", units) == ["docker-registry"]


def test_no_units_nothing_to_do():
    for name in ("__service_packaged_names", "__service_rendered_units", "__service_unwanted_rendered_names",
                 "__service_unwanted_packaged_names"):
        assert _value(name, []) == []


def test_a_templated_wanted_flag_decides_for_packaged_units_too():
    units = [{"name": "systemd-timesyncd", "packaged": True, "wanted": "{{ 1 == 2 }}"}]
    assert _value("__service_unwanted_packaged_names", units) == ["systemd-timesyncd"]
    assert _value("__service_rendered_units", units) == []


def _restart(units, restart, rendered_changed=(), started_changed=()):
    extra = {
        "service_units": units,
        "service_restart": list(restart),
        # As the files module answers for the filter's entries: one result per unit file, in order.
        "__service_rendered": {"results": [
            {"path": entry["path"], "changed": entry["path"].rsplit("/", 1)[1] in rendered_changed}
            for entry in service_unit_files([u for u in units if u["wanted"] and not u.get("packaged")])]},
        # As the units module answers: the wanted units it found down and started (a timer's as its .timer).
        "__service_state": {"started": [u["name"] + (".timer" if "timer" in u else "") for u in units
                                        if u["wanted"] and u["name"] in started_changed]},
    }
    return RoleRenderer("service", extra=extra).value("__service_to_restart")


def test_a_packaged_unit_restarts_only_when_told():
    assert _restart([DOCKER], []) == []
    assert _restart([DOCKER], ["docker"]) == ["docker"]


def test_a_packaged_unit_just_started_is_not_restarted():
    assert _restart([DOCKER], ["docker"], started_changed=["docker"]) == []


def test_an_unwanted_packaged_unit_is_not_restarted():
    assert _restart([REGISTRY, DOCKER], ["docker-registry", "docker"]) == ["docker"]


def test_callers_order_then_changed_unit_files():
    units = [SPARK, DOCKER]
    assert _restart(units, ["docker"], rendered_changed=["spark-worker.service"]) == ["docker", "spark-worker"]


def test_no_rendered_unit_at_all():
    extra = {"service_units": [DOCKER], "service_restart": ["docker"],
             "__service_rendered": {"results": [], "skipped": True}, "__service_state": {"started": []}}
    assert RoleRenderer("service", extra=extra).value("__service_to_restart") == ["docker"]


def _unit(**item):
    text = RoleRenderer("service", extra={"item": {**SPARK, **item}}).render("unit.service.j2")
    return [line for line in text.splitlines() if line and not line.startswith("#")]


SANDBOX = ["NoNewPrivileges=yes", "ProtectSystem=full", "ProtectKernelTunables=yes"]


def test_a_daemon_of_its_own_user_is_sandboxed():
    lines = _unit(user="spark")
    assert "User=spark" in lines
    assert all(setting in lines for setting in SANDBOX)


@pytest.mark.parametrize("item", [{}, {"user": "root"}, {"user": "yarn", "sandbox": False}])
def test_root_daemons_and_those_that_opt_out_are_not(item):
    lines = _unit(**item)
    assert not [line for line in lines if line.split("=", maxsplit=1)[0] in {s.split("=", maxsplit=1)[0] for s in SANDBOX}]


JOB = {"name": "sparkfleet-registry-gc", "description": "GC", "exec_start": "/usr/local/sbin/gc", "wanted": True,
       "timer": {"on_calendar": "Sun *-*-* 03:00:00"}}


def test_a_job_restarts_as_its_timer_never_as_its_service():
    assert _restart([SPARK, JOB], [], rendered_changed=["sparkfleet-registry-gc.timer", "spark-worker.service"]) == [
        "spark-worker", "sparkfleet-registry-gc.timer"]
    assert _restart([SPARK, JOB], [], rendered_changed=["sparkfleet-registry-gc.service"]) == [
        "sparkfleet-registry-gc.timer"]
    assert _restart([SPARK, JOB], ["spark-worker"]) == ["spark-worker"]


def test_a_job_just_started_as_its_timer_is_not_restarted():
    assert _restart([SPARK, JOB], [], rendered_changed=["sparkfleet-registry-gc.timer", "spark-worker.service"],
                    started_changed=["sparkfleet-registry-gc"]) == ["spark-worker"]


def test_the_wanted_units_start_a_job_as_its_timer():
    units = [SPARK, JOB, OLD, DOCKER]
    assert _value("__service_wanted_units", units) == ["spark-worker", "sparkfleet-registry-gc.timer", "docker"]
    assert _value("__service_wanted_units", [SPARK]) == ["spark-worker"]


def test_each_unit_file_is_one_entry_a_jobs_service_before_its_timer():
    entries = service_unit_files([SPARK, JOB])
    assert [(e["path"], e["template"], e["vars"]["item"]["name"]) for e in entries] == [
        ("/etc/systemd/system/spark-worker.service", "unit.service.j2", "spark-worker"),
        ("/etc/systemd/system/sparkfleet-registry-gc.service", "unit.service.j2", "sparkfleet-registry-gc"),
        ("/etc/systemd/system/sparkfleet-registry-gc.timer", "unit.timer.j2", "sparkfleet-registry-gc")]
    assert {(e["owner"], e["group"], e["mode"], e["backup"]) for e in entries} == {("root", "root", "0644", True)}


def test_a_job_is_a_oneshot_service_without_restart_or_install():
    text = RoleRenderer("service", extra={"item": JOB}).render("unit.service.j2")
    assert "Type=oneshot" in text.splitlines()
    assert "Restart=" not in text and "[Install]" not in text
    assert "Restart=on-failure" in RoleRenderer("service", extra={"item": SPARK}).render("unit.service.j2")


def test_a_jobs_timer_starts_its_service_on_the_schedule():
    lines = RoleRenderer("service", extra={"item": JOB}).render("unit.timer.j2").splitlines()
    assert "OnCalendar=Sun *-*-* 03:00:00" in lines
    assert "Unit=sparkfleet-registry-gc.service" in lines
    assert "Persistent=true" in lines
    assert "WantedBy=timers.target" in lines
