"""Every role keeps the collection's contract: documented defaults, an argument
spec that declares each of them (name, type, description; the value lives in
defaults/main.yml only), a README generated from both, and, for the component
roles, a `validate` entry point that the preflight play runs."""

import importlib.util
import json
import pathlib
import subprocess
import sys

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
ROLES = sorted(p.name for p in (ROOT / "roles").iterdir() if (p / "meta" / "argument_specs.yml").exists())
# Component roles run in a layer and are validated by the preflight play; the others are
# shared mechanisms (secrets, download, platform, service) that component roles call.
LAYER_ROLES = sorted(r for r in ROLES if (ROOT / "roles" / r / "tasks" / "validate.yml").exists())


def _yaml(path):
    return yaml.safe_load(path.read_text()) or {}


def _specs(role):
    return _yaml(ROOT / "roles" / role / "meta" / "argument_specs.yml")["argument_specs"]


def test_there_are_roles():
    assert {"common", "java", "spark"} <= set(LAYER_ROLES)
    assert {"secrets", "download", "platform", "service"} <= set(ROLES)


@pytest.mark.parametrize("role", ROLES)
def test_argument_spec_declares_the_defaults(role):
    base = ROOT / "roles" / role
    own = _yaml(base / "defaults" / "main.yml")
    # A cluster-wide default lives in the role this one depends on (roles/cluster_defaults).
    defaults = dict(own)
    for dependency in _yaml(base / "meta" / "main.yml").get("dependencies") or []:
        name = (dependency["role"] if isinstance(dependency, dict) else dependency).removeprefix("sparkfleet.cluster.")
        defaults.update(_yaml(ROOT / "roles" / name / "defaults" / "main.yml"))
    options = _specs(role)["main"]["options"]
    public = {name for name in own if not name.startswith("_")}
    assert public - set(options) == set(), "defaults without a spec entry"
    for name, option in options.items():
        assert option.get("type"), f"{name} has no type"
        assert option.get("description"), f"{name} has no description"
        if option.get("required"):
            # A default would satisfy `required` (role defaults are among the variables Ansible checks).
            assert name not in defaults, f"{name} is required, so it has no default"
        else:
            assert name in defaults, f"{name} is optional, so defaults/main.yml gives its default"


def test_every_cluster_wide_default_is_declared_by_a_role_that_reads_it():
    """roles/cluster_defaults has no argument spec of its own: a `main` spec would add a check task
    to every play of every host that includes a role depending on it. Each of its values is an
    option of a role that reads it (its owner), whose spec types and describes it; the derived
    sparkfleet_* values are no inputs."""
    values = _yaml(ROOT / "roles" / "cluster_defaults" / "defaults" / "main.yml")
    declared = {name for role in ROLES if _depends_on_cluster_defaults(role) for name in _specs(role)["main"]["options"]}
    assert not (ROOT / "roles" / "cluster_defaults" / "meta" / "argument_specs.yml").exists()
    assert sorted(n for n in values if not n.startswith("sparkfleet_") and n not in declared) == []


def _spec_defaults(options, where):
    for name, option in (options or {}).items():
        if "default" in (option or {}):
            yield f"{where}.{name}"
        yield from _spec_defaults((option or {}).get("options"), f"{where}.{name}")


@pytest.mark.parametrize("role", ROLES)
def test_argument_specs_state_no_defaults(role):
    """One source: a default lives in defaults/main.yml (or, for a sub-option or an option of a shared
    entry point that callers set, in the `| default()` of the code that reads it). Ansible validates the
    value the role gets, role defaults included, and never hands a spec's `default` to the role."""
    found = [p for entry, spec in _specs(role).items() for p in _spec_defaults((spec or {}).get("options"), entry)]
    assert found == [], f"meta/argument_specs.yml states defaults: {found}"


@pytest.mark.parametrize("role", ROLES)
def test_defaults_pass_the_argument_spec(role):
    """What Ansible checks when the role starts (its defaults are among the variables it validates),
    checked here before any run for every default that is not a template."""
    from ansible.module_utils.common.arg_spec import ArgumentSpecValidator  # pylint: disable=import-outside-toplevel

    base = ROOT / "roles" / role
    # The role's options whose default a dependency holds (roles/cluster_defaults) count too.
    defaults = {}
    for dependency in _yaml(base / "meta" / "main.yml").get("dependencies") or []:
        name = (dependency["role"] if isinstance(dependency, dict) else dependency).removeprefix("sparkfleet.cluster.")
        defaults.update(_yaml(ROOT / "roles" / name / "defaults" / "main.yml"))
    defaults.update(_yaml(base / "defaults" / "main.yml"))
    options = _specs(role)["main"]["options"]
    plain = {n: v for n, v in defaults.items() if n in options and not (isinstance(v, str) and "{{" in v)}
    result = ArgumentSpecValidator({n: options[n] for n in plain}).validate(plain, validate_role_argument_spec=True)
    assert result.error_messages == []


@pytest.mark.parametrize("role", LAYER_ROLES)
def test_validate_entry_point_checks_the_same_options(role):
    """The checks are the role's validate entry point (the layer plays run it once per run, before
    the role applies): the same argument spec as main, and main itself does not run them again."""
    base = ROOT / "roles" / role
    specs = _specs(role)
    assert "validate" in specs
    assert specs["validate"]["options"] == specs["main"]["options"]
    assert "validate.yml" not in json.dumps(_yaml(base / "tasks" / "main.yml")), "main.yml runs the checks again"


READ_ONLY = {"ansible.builtin.assert", "ansible.builtin.fail", "ansible.builtin.debug",
             "ansible.builtin.set_fact", "ansible.builtin.include_vars", "ansible.builtin.stat",
             "ansible.builtin.setup", "ansible.builtin.package_facts"}


@pytest.mark.parametrize("role", LAYER_ROLES)
def test_validate_tasks_change_nothing(role):
    for task in _yaml(ROOT / "roles" / role / "tasks" / "validate.yml"):
        modules = {k for k in task if "." in k}
        if modules == {"ansible.builtin.include_role"}:
            # The shared read-only entry points only.
            args = task["ansible.builtin.include_role"]
            assert args["name"] == "sparkfleet.cluster.platform" and args.get("tasks_from") in ("os_vars", "ports", "installed")
            continue
        if modules == {"ansible.builtin.meta"}:
            # A role that is switched off (hadoop_enabled, ...) has nothing to check.
            assert task["ansible.builtin.meta"] == "end_role", "validate.yml may only end itself"
            continue
        if modules == {"ansible.builtin.uri"}:
            # A question to the controller's side (does this release exist?), never a change.
            assert task["ansible.builtin.uri"].get("method", "GET") in ("GET", "HEAD"), "validate.yml may only read URLs"
            assert task.get("delegate_to") == "localhost" and task.get("check_mode") is False
            continue
        assert modules <= READ_ONLY, f"validate.yml uses {modules - READ_ONLY}"


def _platform_tasks(name):
    """The tasks of the platform role's task file, those of the files it includes in their place."""
    for task in _yaml(ROOT / "roles" / "platform" / "tasks" / name):
        if "ansible.builtin.include_tasks" in task:
            yield from _platform_tasks(task["ansible.builtin.include_tasks"])
        else:
            yield task


@pytest.mark.parametrize("entry_point", ["os_vars", "ports"])
def test_platform_read_only_entry_points_only_read(entry_point):
    for task in _platform_tasks(f"{entry_point}.yml"):
        modules = {k for k in task if "." in k}
        if entry_point == "ports" and modules == {"ansible.builtin.command"}:
            # The listening sockets: one ss call that reports no change.
            assert task["ansible.builtin.command"]["argv"][0] == "ss"
            assert task["changed_when"] is False and task["check_mode"] is False
            continue
        assert modules <= READ_ONLY


def test_platform_installed_entry_point_only_reads():
    """validate.yml files may include it: one dpkg-query call that reports no change, and set_fact."""
    for task in _yaml(ROOT / "roles" / "platform" / "tasks" / "installed.yml"):
        modules = {k for k in task if "." in k}
        if modules == {"ansible.builtin.command"}:
            assert task["ansible.builtin.command"]["argv"][0] == "dpkg-query"
            assert task["changed_when"] is False and task["check_mode"] is False
            continue
        assert modules <= READ_ONLY


def _strings(node):
    if isinstance(node, dict):
        for key, value in node.items():
            yield str(key)
            yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value)
    elif isinstance(node, str):
        yield node


@pytest.mark.parametrize("role", ROLES)
def test_no_role_keeps_the_package_list_among_the_facts(role):
    """package_facts' fact (every package's versions and sources, about half of a host's facts) would
    stay in the fact cache and be copied into the variables of every later task: the roles ask the
    platform role's installed entry point (platform_installed_packages, a variable of the run)."""
    for path in (ROOT / "roles" / role).glob("*/*.yml"):
        if path.parent.name not in ("tasks", "handlers", "vars", "defaults"):
            continue
        for text in _strings(_yaml(path)):
            assert "package_facts" not in text and "ansible_facts['packages']" not in text, f"{path}: {text[:80]}"
            assert 'ansible_facts["packages"]' not in text and "ansible_facts.packages" not in text, f"{path}: {text[:80]}"


def test_role_readmes_are_generated_from_the_sources():
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "role_docs.py"), "--check"], check=False,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("role", ROLES)
def test_role_references_use_fqcn(role):
    # Roles and filters resolve in an installed collection only by their FQCN.
    for path in (ROOT / "roles" / role).rglob("*.yml"):
        for task in _walk(_yaml(path) if path.parent.name in ("tasks", "handlers") else []):
            for key in ("ansible.builtin.include_role", "ansible.builtin.import_role"):
                if key in task:
                    assert task[key]["name"].startswith("sparkfleet.cluster."), f"{path}: {task[key]['name']}"


def _walk(tasks):
    for task in tasks or []:
        yield task
        for key in ("block", "rescue", "always"):
            yield from _walk(task.get(key))


# The shared mechanisms' entry points that component roles and playbooks call with values they
# compute themselves (platform, secrets, service, download, pki's issue, java's recorded_home). Those calls
# skip Ansible's run-time argument check (rolespec_validate: false): it would be a task per host
# and call, about one in fourteen of a site.yml run's, and it can only catch a mistake of this
# collection's own code. That check is made here instead, on every such call, before any run.
SHARED_ENTRY_POINTS = {"platform": None, "secrets": None, "service": None, "download": None,
                       "pki": {"issue"}, "java": {"recorded_home"}}
_TYPES = {"list": list, "dict": dict, "bool": bool, "int": int, "str": str, "path": str, "raw": object}


def _role_calls():
    sources = [p for p in (ROOT / "roles").glob("*/*/*.yml") if p.parent.name in ("tasks", "handlers")]
    sources += sorted((ROOT / "playbooks").glob("*.yml"))
    for path in sources:
        data = _yaml(path)
        plays = data if path.parent.name == "playbooks" else [{"tasks": data}]
        for play in plays if isinstance(plays, list) else []:
            for section in ("pre_tasks", "tasks", "post_tasks", "handlers"):
                for task in _walk(play.get(section) if isinstance(play, dict) else None):
                    for key in ("ansible.builtin.include_role", "ansible.builtin.import_role"):
                        if key in task:
                            yield path, task, task[key]


def test_shared_entry_point_calls_match_their_argument_specs():
    checked = 0
    for path, task, args in _role_calls():
        role = args["name"].removeprefix("sparkfleet.cluster.")
        entry_point = args.get("tasks_from", "main")
        where = f"{path.relative_to(ROOT)}: {task.get('name')} ({role}:{entry_point})"
        if role not in SHARED_ENTRY_POINTS or entry_point not in (SHARED_ENTRY_POINTS[role] or {entry_point}):
            # Entry points a user may call too keep Ansible's check at run time, but for a layer
            # play's include of a due role: the play ran its validate entry point (same spec) first.
            gated = "__sparkfleet_applied.due" in json.dumps(task.get("when", ""))
            assert "rolespec_validate" not in args or gated, f"{where}: only shared entry points skip the check"
            continue
        assert args.get("rolespec_validate") is False, f"{where}: set rolespec_validate: false (checked here)"
        options = _specs(role)[entry_point].get("options") or {}  # every one has a spec
        given = task.get("vars") or {}
        prefix = role + "_"
        unknown = sorted(k for k in given if k.startswith(prefix) and k not in options)
        assert not unknown, f"{where}: {unknown} not in the entry point's argument spec"
        missing = sorted(k for k, spec in options.items() if spec.get("required") and k not in given)
        assert not missing, f"{where}: the required {missing} not given"
        for name, value in given.items():
            if name in options and not (isinstance(value, str) and "{{" in value):
                wanted = _TYPES[options[name].get("type", "str")]
                assert isinstance(value, wanted), f"{where}: {name} must be a {options[name].get('type', 'str')}: {value!r}"
        checked += 1
    assert checked >= 60, f"only {checked} calls of the shared entry points found"


def test_the_preflight_checks_the_same_shared_mechanisms():
    """Their user-settable int and bool options are checked by the preflight's first play
    (plugins/filter/inputs.py), since their calls skip Ansible's check (an entry point without
    options, java's recorded_home, has nothing to check)."""
    spec = importlib.util.spec_from_file_location("sf_inputs_contract", ROOT / "plugins" / "filter" / "inputs.py")
    inputs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(inputs)
    with_options = {role for role, points in SHARED_ENTRY_POINTS.items()
                    if any((entry or {}).get("options") for name, entry in _specs(role).items()
                           if points is None or name in points)}
    assert "java" not in with_options
    assert set(inputs.SHARED_ROLES) == with_options


def _depends_on_cluster_defaults(role):
    meta = _yaml(ROOT / "roles" / role / "meta" / "main.yml") or {}
    names = [d.get("role", d) if isinstance(d, dict) else d for d in meta.get("dependencies") or []]
    return "sparkfleet.cluster.cluster_defaults" in names


def test_a_role_with_cluster_wide_defaults_is_included_public():
    """A private include_role hides the defaults of the role's dependencies from the shared roles it
    calls (its health checks run inside the service role): a role that reads cluster_defaults is
    included whole with public: true, as the layer plays do."""
    files = [*(ROOT / "playbooks").glob("*.yml"), *(ROOT / "tests" / "lab").glob("*.yml"),
             *(ROOT / "molecule").rglob("*.yml")]
    checked = 0
    for path in files:
        data = _yaml(path)
        for play in data if isinstance(data, list) else []:
            for section in ("pre_tasks", "tasks", "post_tasks", "handlers"):
                for task in _walk(play.get(section) if isinstance(play, dict) else None):
                    args = task.get("ansible.builtin.include_role")
                    if not isinstance(args, dict) or "tasks_from" in args or "{" in args.get("name", "{"):
                        continue
                    role = args["name"].removeprefix("sparkfleet.cluster.")
                    if (ROOT / "roles" / role).is_dir() and _depends_on_cluster_defaults(role):
                        checked += 1
                        assert args.get("public") is True, f"{path.relative_to(ROOT)}: {task.get('name')} is not public"
    assert checked > 5
