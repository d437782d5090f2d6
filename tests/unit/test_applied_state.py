"""The applied-state gate: the host-side module's check and record (plugins/modules/applied_state.py)
and the controller side's view of a role (plugins/action/applied_state.py)."""

import json
import os
import subprocess
import sys

import pytest
from conftest import RoleRenderer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULE = os.path.join(ROOT, "plugins", "modules", "applied_state.py")


def run(args, tmp_path):
    """Run the module as Ansible would (its arguments in a JSON file), return its answer."""
    args_file = tmp_path / "args.json"
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    # The collection's module utilities importable by their FQCN, as AnsiballZ bundles them.
    path = [os.path.join(ROOT, "collections")] + [p for p in sys.path if p]
    out = subprocess.run([sys.executable, MODULE, str(args_file)], capture_output=True, text=True, check=False,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(path)))
    return json.loads(out.stdout)


@pytest.fixture
def host(tmp_path):
    conf = tmp_path / "etc" / "app"
    conf.mkdir(parents=True)
    (conf / "app.conf").write_text("port = 1\n")
    (tmp_path / "link").symlink_to(conf)
    return tmp_path


def declared(host, **extra):
    want = {"inputs": {"code": "c1", "app_port": "p1"},
            "files": [str(host / "etc" / "app"), str(host / "link"), str(host / "gone.conf")]}
    want.update(extra)
    return want


def check(host, want):
    return run({"state": "check", "path": str(host / "records"), "roles": {"app": want}}, host)


def record(host, want):
    return run({"state": "record", "path": str(host / "records"), "roles": {"app": want}}, host)


def test_a_role_never_applied_is_due(host):
    answer = check(host, declared(host))
    assert answer["due"] == ["app"]
    assert answer["reasons"]["app"] == ["no record of an earlier run"]
    assert answer["changed"] is False


def test_a_recorded_role_is_not_due_and_the_record_is_root_only(host):
    assert record(host, declared(host))["changed"] is False
    assert check(host, declared(host))["due"] == []
    assert oct(os.stat(host / "records" / "app.json").st_mode & 0o777) == "0o600"
    # Hashes of inputs only, never values; a symlink is recorded as where it points, not walked.
    saved = json.loads((host / "records" / "app.json").read_text())
    assert saved["files"][str(host / "link")] == "link to %s" % (host / "etc" / "app")
    assert saved["files"][str(host / "gone.conf")] == "absent"


def test_changed_inputs_are_named(host):
    record(host, declared(host))
    want = declared(host)
    want["inputs"]["app_port"] = "p2"
    assert check(host, want)["reasons"]["app"] == ["inputs changed: app_port"]


@pytest.mark.parametrize("drift, reason", [
    (lambda h: (h / "etc" / "app" / "app.conf").write_text("port = 2\n"), "file {}/etc/app/app.conf changed"),
    (lambda h: (h / "etc" / "app" / "app.conf").unlink(), "file {}/etc/app/app.conf is gone"),
    (lambda h: (h / "gone.conf").write_text("x"), "file {}/gone.conf changed"),
    (lambda h: ((h / "link").unlink(), (h / "link").symlink_to(h)), "file {}/link changed"),
])
def test_drift_in_a_declared_file_makes_the_role_due(host, drift, reason):
    record(host, declared(host))
    drift(host)
    answer = check(host, declared(host))
    assert answer["due"] == ["app"]
    assert answer["reasons"]["app"] == [reason.format(host)]


def test_an_edit_that_keeps_size_and_modification_time_is_seen(host):
    """A file whose signature is the record's is not read again; an edit moves its change time,
    which `touch -r` cannot set back."""
    conf = host / "etc" / "app" / "app.conf"
    record(host, declared(host))
    before = os.stat(conf)
    conf.write_text("port = 9\n")  # same size
    os.utime(conf, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert check(host, declared(host))["reasons"]["app"] == ["file %s changed" % conf]


def test_a_check_without_drift_reads_the_records_only(host):
    """The preflight pass: no record, or other inputs, make a role due; a drifted host alone does not."""
    record(host, declared(host))
    (host / "etc" / "app" / "app.conf").write_text("port = 2\n")
    args = {"state": "check", "path": str(host / "records"), "roles": {"app": declared(host)}, "drift": False}
    assert run(args, host)["due"] == []
    args["roles"]["app"]["inputs"]["app_port"] = "p2"
    assert run(args, host)["reasons"]["app"] == ["inputs changed: app_port"]


def test_a_probe_that_answers_otherwise_makes_the_role_due(host):
    flag = host / "flag"
    flag.write_text("joined\n")
    want = declared(host, probes=[["cat", str(flag)]])
    record(host, want)
    assert check(host, want)["due"] == []
    flag.write_text("left\n")
    assert check(host, want)["reasons"]["app"] == ["probe cat %s answers otherwise" % flag]


def test_a_missing_package_makes_the_role_due(host):
    if not os.path.exists("/usr/bin/dpkg-query"):
        pytest.skip("no dpkg-query on this machine: the package check is Debian's")
    # dpkg is installed; awk is a name an installed package provides (mawk or gawk).
    want = declared(host, packages=["dpkg", "awk", "sparkfleet-no-such-package"])
    record(host, want)
    assert check(host, want)["reasons"]["app"] == ["package sparkfleet-no-such-package is not installed"]


# The controller side: what counts as a role's code and inputs.

def _action():
    from conftest import _init_plugin_loader  # pylint: disable=import-outside-toplevel
    _init_plugin_loader()  # the collection's plugins by their FQCN, as in a run
    from ansible_collections.sparkfleet.cluster.plugins.action import applied_state  # pylint: disable=import-outside-toplevel
    return applied_state


@pytest.fixture
def action():
    return _action()


def test_a_role_includes_the_roles_its_tasks_call(action):
    assert {"spark", "service", "platform", "secrets", "download"} <= set(action._role_closure("spark"))
    assert action._role_closure("shared_storage") == ["platform", "shared_storage"]


def test_results_are_not_inputs(action):
    produced = action._produced_names()
    # registered (the service role's rendered units) and set by set_fact (the platform role's list)
    assert {"__service_rendered", "platform_packages_missing"} <= produced
    assert "spark_worker_cores" not in produced


def test_every_role_of_a_layer_declares_what_the_gate_checks():
    """A role without __<role>_applied is due on every run; no role a layer gates may be."""
    import glob  # pylint: disable=import-outside-toplevel
    import re  # pylint: disable=import-outside-toplevel
    import yaml  # pylint: disable=import-outside-toplevel
    gated = set()
    for playbook in glob.glob(os.path.join(ROOT, "playbooks", "*.yml")):
        with open(playbook) as handle:
            gated |= set(re.findall(r"'([a-z_]+)' in __sparkfleet_applied\.due", handle.read()))
    assert {"common", "spark", "jupyterhub", "gpu_exporter", "monitoring"} <= gated
    for role in sorted(gated):
        with open(os.path.join(ROOT, "roles", role, "vars", "main.yml")) as handle:
            assert "__%s_applied" % role in (yaml.safe_load(handle) or {}), role


def test_each_due_role_is_checked_once_per_run(action):
    """The preflight pass checks the roles whose inputs changed and applies none; the main pass
    checks only the due roles no earlier play of the run checked (a role only drift made due)."""
    answer = action.ActionModule._answer
    preflight = answer({}, {"sparkfleet_preflight": True}, ["java", "spark"], {"java": ["no record"], "spark": ["x"]})
    assert preflight["due"] == [] and preflight["check"] == ["java", "spark"]
    # The next play on the host sees that answer registered: the main pass of the same layer.
    main = answer({}, {"__sparkfleet_applied": preflight}, ["java", "spark", "livy"], {"java": [], "spark": [], "livy": []})
    assert main["due"] == ["java", "spark", "livy"] and main["check"] == ["livy"]
    assert main["checked"] == ["java", "spark", "livy"]
    # A new run starts with nothing registered: everything due is checked again.
    assert answer({}, {}, ["java"], {"java": []})["check"] == ["java"]


def test_a_value_of_the_roles_files_is_fingerprinted_by_its_text_unless_it_reads_more(action):
    """Templating is most of the gate's cost: a value the role's files set stands for itself (its
    text is in the code's hash, the variables it names are inputs of their own), unless the host
    overrides it or it reads facts, other hosts' variables or lookups."""
    own = "{{ spark_worker_cores | int * 2 }}"
    assert action._stands_for_itself(own, own)
    placed = "{{ inventory_hostname in groups['spark_masters'] }}"
    assert action._stands_for_itself(placed, placed)
    assert not action._stands_for_itself(8, own)  # the inventory's value: templated
    for reads in ("{{ ansible_facts['memtotal_mb'] // 2 }}", "{{ hostvars[h].spark_worker_cores }}",
                  "{{ lookup('ansible.builtin.file', 'x') }}", "{{ vars['spark_' ~ kind] }}"):
        assert not action._stands_for_itself(reads, reads), reads
    # Inside a list or dict of the role's files too.
    units = [{"name": "spark-worker", "wanted": "{{ ansible_facts['os_family'] == 'Debian' }}"}]
    assert not action._stands_for_itself(units, units)


def test_a_file_whose_signature_is_recorded_is_not_read_again(host, action):
    """The recorded checksum stands for a file whose size, times and inode are the record's."""
    from ansible_collections.sparkfleet.cluster.plugins.module_utils import applied_state as host_side  # pylint: disable=import-outside-toplevel
    conf = str(host / "etc" / "app" / "app.conf")
    state, signatures = host_side.files_state([conf])
    assert state[conf] == host_side.sha1(conf)
    known = {conf: ("recorded-checksum", signatures[conf])}
    assert host_side.files_state([conf], known)[0][conf] == "recorded-checksum"
    (host / "etc" / "app" / "app.conf").write_text("port = 3\n")
    assert host_side.files_state([conf], known)[0][conf] == host_side.sha1(conf)


def test_what_a_role_recorded_in_the_local_facts_is_no_input(action):
    """The java role records JAVA_HOME in the host's local facts; whether this run's facts hold them
    (a cached gather of another subset has none) or the java role ran earlier in the run must not
    make the roles after it due: sparkfleet_java_home is a result, not an input."""
    import types  # pylint: disable=import-outside-toplevel
    from ansible.parsing.dataloader import DataLoader  # pylint: disable=import-outside-toplevel
    from ansible.template import Templar  # pylint: disable=import-outside-toplevel
    task = types.SimpleNamespace(args={}, check_mode=False, async_val=0, action="sparkfleet.cluster.applied_state")
    plugin = action.ActionModule(task, None, None, DataLoader(), Templar(loader=DataLoader()), None)
    base = {"inventory_hostname": "m1", "groups": {"all": ["m1"], "spark_masters": ["m1"]}, "group_names": ["spark_masters"],
            "hostvars": {"m1": {}}}
    jdk = "/usr/lib/jvm/java-17-openjdk-amd64"
    runs = [dict(base, ansible_local={}), dict(base, ansible_local={"sparkfleet_java": {"java_home": jdk}}),
            dict(base, ansible_local={}, java_home=jdk)]
    inputs = [plugin._inputs("monitoring", task_vars)[0] for task_vars in runs]
    assert "sparkfleet_java_home" not in inputs[0]
    assert inputs[0] == inputs[1] == inputs[2]


def test_a_fact_a_module_set_is_no_input(action):
    """The docker role reads the accounts from getent's facts: the value in this run's facts (none,
    the cache's, or what a role's getent task read after it changed a group) must not make it due."""
    import types  # pylint: disable=import-outside-toplevel
    from ansible.parsing.dataloader import DataLoader  # pylint: disable=import-outside-toplevel
    from ansible.template import Templar  # pylint: disable=import-outside-toplevel
    task = types.SimpleNamespace(args={}, check_mode=False, async_val=0, action="sparkfleet.cluster.applied_state")
    plugin = action.ActionModule(task, None, None, DataLoader(), Templar(loader=DataLoader()), None)
    base = {"inventory_hostname": "w1", "groups": {"all": ["w1"], "swarm_workers": ["w1"]}, "group_names": ["swarm_workers"],
            "hostvars": {"w1": {}}}

    def read(members):
        accounts = {"getent_passwd": {"admin": ["x", "1000"]}, "getent_group": {"docker": ["x", "999", members]}}
        return dict(base, ansible_facts=accounts, **accounts)

    runs = [base, read("admin"), read("admin,mallory")]
    inputs = [plugin._inputs("docker", task_vars)[0] for task_vars in runs]
    assert not {"getent_passwd", "getent_group"} & set(inputs[1])
    assert inputs[0] == inputs[1] == inputs[2]


def test_the_groups_a_playbook_makes_for_one_run_are_no_input(action):
    """site.yml's sparkfleet_unchanged and a replacement's groups scope a run: with them in the
    groups' fingerprint, the hosts a run goes through would find every role due."""
    import types  # pylint: disable=import-outside-toplevel
    from ansible.parsing.dataloader import DataLoader  # pylint: disable=import-outside-toplevel
    from ansible.template import Templar  # pylint: disable=import-outside-toplevel
    task = types.SimpleNamespace(args={}, check_mode=False, async_val=0, action="sparkfleet.cluster.applied_state")
    plugin = action.ActionModule(task, None, None, DataLoader(), Templar(loader=DataLoader()), None)
    base = {"inventory_hostname": "w1", "groups": {"all": ["w1", "w2"], "spark_workers": ["w1", "w2"]},
            "group_names": ["spark_workers"], "hostvars": {"w1": {}, "w2": {}}}
    scoped = dict(base, groups=dict(base["groups"], sparkfleet_unchanged=["w2"], sparkfleet_replace_converge=["w1"]),
                  group_names=["spark_workers", "sparkfleet_replace_converge"])
    grown = dict(base, groups=dict(base["groups"], spark_workers=["w1"]))
    inputs = [plugin._inputs("docker", task_vars)[0] for task_vars in (base, scoped, grown)]
    assert inputs[0] == inputs[1] and inputs[0]["groups"] != inputs[2]["groups"]


def test_pki_does_not_track_the_directory_the_issuing_roles_write_into():
    """The issue entry point writes each calling role's certificate into pki_cert_dir in a later
    layer than pki's own: had pki declared that directory, every converge would leave it due."""
    from conftest import RoleRenderer  # pylint: disable=import-outside-toplevel
    pki = RoleRenderer("pki", {"spark_masters": ["m1"]})
    issued = os.path.join(pki.value("pki_cert_dir", "m1"), "monitoring-exporter.crt")
    files = pki.value("__pki_applied", "m1")["files"]
    assert files and not [f for f in files if issued.startswith(f.rstrip("/") + "/")], files


def test_each_hosts_variables_are_read_once_a_call(action, tmp_path):
    """Reading a host's variables costs tens of milliseconds; the inputs that read every host's (the
    pki role's permitted names, Spark's sizing, the firewalls' lists) and each role's peers read
    them again and again. Through the gate's hostvars each host is read once, with the same values."""
    import types  # pylint: disable=import-outside-toplevel
    from ansible.inventory.manager import InventoryManager  # pylint: disable=import-outside-toplevel
    from ansible.parsing.dataloader import DataLoader  # pylint: disable=import-outside-toplevel
    from ansible.template import Templar  # pylint: disable=import-outside-toplevel
    from ansible.vars.hostvars import HostVars  # pylint: disable=import-outside-toplevel
    from ansible.vars.manager import VariableManager  # pylint: disable=import-outside-toplevel
    hosts = tmp_path / "hosts.ini"
    hosts.write_text("[spark_masters]\nm1 ansible_host=192.0.2.1\n[spark_workers]\nw1 spark_worker_cores=3\nw2\n")
    loader = DataLoader()
    inventory = InventoryManager(loader, sources=[str(hosts)])
    manager = VariableManager(loader, inventory)
    for number, name in enumerate(("m1", "w1", "w2"), 1):
        manager.set_host_facts(name, {"memtotal_mb": 4096 * number, "processor_vcpus": 2 * number, "fqdn": name + ".example",
                                      "default_ipv4": {"address": "10.0.0.%d" % number}})
    plain = HostVars(inventory, manager, loader)
    reads = []
    real = manager.get_vars
    manager.get_vars = lambda **kw: reads.append(kw["host"].name) or real(**kw)

    once = action._hostvars_read_once(plain)
    assert type(once) is HostVars  # pylint: disable=unidiomatic-typecheck  # the only type templating knows
    task = types.SimpleNamespace(args={}, check_mode=False, async_val=0, action="sparkfleet.cluster.applied_state")
    plugin = action.ActionModule(task, None, None, loader, Templar(loader=loader), None)
    task_vars = dict(real(host=inventory.get_host("w1"), include_hostvars=False), hostvars=once)
    for role in ("spark", "ui_gateway", "livy"):
        plugin._inputs(role, task_vars)
    assert sorted(reads) == ["m1", "w1", "w2"]

    reads.clear()
    assert plugin._peers(task_vars)["m1"]["ansible_host"] == "192.0.2.1"
    assert plugin._peers(task_vars)["w2"]["facts"]["memtotal_mb"] == 12288
    assert once["w1"]["spark_worker_cores"] == 3
    assert not reads
    assert plain["w1"]["spark_worker_cores"] == 3 and reads == ["w1"]


ISSUERS = [  # role, the host it issues on, the groups that make it issue there, the certificate
    ("gpu_exporter", "g1", {"gpu_workers": ["g1"], "spark_workers": ["g1"]}, "/etc/ssl/sparkfleet/gpu-exporter.crt"),
    ("jupyterhub", "h1", {"hub": ["h1"]}, "/etc/jupyterhub/tls/jupyterhub.crt"),
    ("livy", "m1", {"livy": ["m1"], "spark_masters": ["m1"]}, "/etc/ssl/sparkfleet/livy.crt"),
    ("monitoring", "m1", {"spark_masters": ["m1"]}, "/etc/ssl/sparkfleet/monitoring-exporter.crt"),
    ("registry", "h1", {"hub": ["h1"], "swarm_managers": ["h1"]}, "/etc/ssl/sparkfleet/registry.crt"),
    ("spark", "m1", {"spark_masters": ["m1"]}, "/etc/ssl/sparkfleet/spark-connect.crt"),
    ("ui_gateway", "m1", {"spark_masters": ["m1"]}, "/etc/ssl/sparkfleet/ui-gateway.crt"),
]


@pytest.mark.parametrize("role, host, groups, certificate", ISSUERS, ids=[i[0] for i in ISSUERS])
def test_a_role_that_issues_a_certificate_declares_it_and_its_renewal(action, role, host, groups, certificate):
    """The gate runs a role only when it is due, and so the pki role's issue entry point only then: a
    deleted certificate or key, or one due for renewal, must make the role due."""
    import types  # pylint: disable=import-outside-toplevel
    from ansible.parsing.dataloader import DataLoader  # pylint: disable=import-outside-toplevel
    from ansible.template import Templar  # pylint: disable=import-outside-toplevel
    task = types.SimpleNamespace(args={}, check_mode=False, async_val=0, action="sparkfleet.cluster.applied_state")
    plugin = action.ActionModule(task, None, None, DataLoader(), Templar(loader=DataLoader()), None)
    hosts = sorted({h for members in groups.values() for h in members})
    facts = {"default_ipv4": {"address": "10.0.0.5"}, "distribution": "Debian", "distribution_major_version": "12",
             "os_family": "Debian", "memtotal_mb": 8192, "processor_vcpus": 4, "fqdn": host}
    task_vars = {"inventory_hostname": host, "groups": dict(groups, all=hosts), "group_names": sorted(groups),
                 "ansible_facts": facts, "hostvars": {h: {"ansible_facts": facts, "inventory_hostname": h} for h in hosts},
                 "livy_enabled": True, "livy_auth": "basic", "gpu_exporter_auth": True, "spark_connect_enabled": True}
    declared = plugin._inputs(role, task_vars)[1]
    key = certificate[:-len(".crt")] + ".key"
    probes = [p for p in declared.get("probes", []) if certificate in p]
    # Declared itself, or in a declared directory.
    for path in (certificate, key):
        assert [f for f in declared["files"] if path == f or path.startswith(f.rstrip("/") + "/")], (path, declared["files"])
    assert len(probes) == 1 and probes[0][:5] == ["openssl", "x509", "-noout", "-checkend", str(30 * 86400)], declared.get("probes")


def test_the_renewal_probe_answers_otherwise_within_the_window_and_without_the_certificate(action, tmp_path):
    import datetime  # pylint: disable=import-outside-toplevel
    from cryptography import x509  # pylint: disable=import-outside-toplevel
    from cryptography.hazmat.primitives import hashes, serialization  # pylint: disable=import-outside-toplevel
    from cryptography.hazmat.primitives.asymmetric import ec  # pylint: disable=import-outside-toplevel
    from ansible_collections.sparkfleet.cluster.plugins.module_utils import applied_state as host_side  # pylint: disable=import-outside-toplevel
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(x509.oid.NameOID.COMMON_NAME, "h1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=60)).sign(key, hashes.SHA256()))
    path = tmp_path / "h1.crt"
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))

    def answer(cert_path, days):
        probe = RoleRenderer("pki", extra={"pki_cert_renew_days": days}).value("__pki_renewal_probe + ['%s']" % cert_path)
        # As the records and the scan run it.
        return host_side.run_command(probe)

    assert answer(path, 30) == (0, "Certificate will not expire\n")
    assert answer(path, 90) == (1, "Certificate will expire\n")
    assert answer(tmp_path / "gone.crt", 30)[0] != 0


def test_the_main_pass_takes_what_the_preflight_read_until_a_role_was_due(action, tmp_path, monkeypatch):
    """Working out the inputs is most of the gate's cost, and the preflight pass has done it for the
    same hosts: the main pass of each play takes them (once), unless a role was due in this run's
    main pass on some host (it may have changed what an input reads). Its drift check still runs."""
    import types  # pylint: disable=import-outside-toplevel
    from ansible.parsing.dataloader import DataLoader  # pylint: disable=import-outside-toplevel
    from ansible.plugins.action import ActionBase  # pylint: disable=import-outside-toplevel
    from ansible.template import Templar  # pylint: disable=import-outside-toplevel
    monkeypatch.setattr(action.C, "DEFAULT_LOCAL_TMP", str(tmp_path))  # the run's own directory
    monkeypatch.setattr(ActionBase, "run", lambda self, tmp=None, task_vars=None: {})
    templated, drift = [], {"due": [], "reasons": {}}

    def inputs(role, task_vars):
        templated.append(role)
        return {"code": "c", "x": task_vars["x"]}, {"files": ["/etc/%s.conf" % role]}

    def gate(roles, task_vars):
        task = types.SimpleNamespace(args={"roles": roles}, check_mode=False, async_val=0,
                                     action="sparkfleet.cluster.applied_state")
        plugin = action.ActionModule(task, None, None, DataLoader(), Templar(loader=DataLoader()), None)
        plugin._inputs = inputs
        plugin._execute_module = lambda module_name, module_args, task_vars: dict(drift, checked=sorted(module_args["roles"]))
        return plugin.run(task_vars=task_vars)

    # The preflight pass of two plays, then the main pass of the first: no templating there.
    answer = gate(["java", "spark"], {"sparkfleet_preflight": True, "x": 1})
    answer = gate(["monitoring"], {"sparkfleet_preflight": True, "x": 1, "__sparkfleet_applied": answer})
    assert templated == ["java", "spark", "monitoring"] and set(answer["read"]) == {"java", "spark", "monitoring"}
    templated.clear()
    main = gate(["java", "spark"], {"x": 1, "__sparkfleet_applied": answer})
    assert templated == [] and main["roles"]["spark"] == {"files": ["/etc/spark.conf"], "inputs": {"code": "c", "x": 1}}
    assert list(main["read"]) == ["monitoring"]  # used once
    # The same play again later in the run reads its inputs afresh.
    assert gate(["java"], {"x": 2, "__sparkfleet_applied": main})["roles"]["java"]["inputs"]["x"] == 2
    assert templated == ["java"]
    # A role due on a host (here drift) in the main pass: the plays after it template their inputs.
    templated.clear()
    drift = {"due": ["java"], "reasons": {"java": ["/etc/java.conf changed"]}}
    assert gate(["java"], {"x": 1, "__sparkfleet_applied": answer})["due"] == ["java"] and templated == []
    drift = {"due": [], "reasons": {}}
    assert gate(["monitoring"], {"x": 3, "__sparkfleet_applied": answer})["roles"]["monitoring"]["inputs"]["x"] == 3
    assert templated == ["monitoring"]


# The run's record: a host as the last whole run left it is left out of site.yml's plays.

def scan(host, sources="s1", python=sys.executable, env=None):
    """The scan as the action runs it on a host: its command, through a shell, and its answer read."""
    action = _action()
    command, script = action._scan_command(python, str(host / "records"), sources)
    out = subprocess.run(command, input=script, shell=True, capture_output=True, text=True, check=False, env=env)
    reasons = action._scan_reasons(out.returncode, out.stdout, out.stderr, python)
    return {"unchanged": not reasons, "reasons": reasons}


def mark(host, sources="s1", roles=("app",)):
    return run({"state": "mark", "path": str(host / "records"), "sources": sources,
                "roles": dict((r, True) for r in roles)}, host)


def test_a_host_is_unchanged_only_as_the_last_whole_run_left_it(host):
    answer = scan(host)
    assert answer["unchanged"] is False
    assert answer["reasons"] == ["no record of a run that went through every layer"]
    record(host, declared(host))
    assert mark(host)["marked"] == ["app"]
    assert scan(host)["unchanged"] is True
    assert scan(host, "s2")["reasons"] == ["what the roles' inputs come from changed since the last whole run"]
    # Drift in any role's files.
    (host / "etc" / "app" / "app.conf").write_text("port = 2\n")
    assert scan(host)["reasons"] == ["file %s changed" % (host / "etc" / "app" / "app.conf")]
    # The role applied again since (its layer's playbook alone): its record is not the run's.
    record(host, declared(host))
    assert scan(host)["reasons"] == ["app was applied since the last whole run, or declares nothing to check"]
    mark(host)
    assert scan(host)["unchanged"] is True
    # A role the run's gates listed without a record (it declares nothing): never unchanged.
    mark(host, roles=("app", "undeclared"))
    assert scan(host)["reasons"] == ["undeclared was applied since the last whole run, or declares nothing to check"]


def test_the_scan_runs_on_a_plain_interpreter_and_a_silent_one_leaves_the_host_in(host):
    """The host side needs the standard library only (the host's python3, isolated: no Ansible
    there); a scan that does not answer never makes a host unchanged."""
    python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    record(host, declared(host))
    mark(host)
    for interpreter, unchanged in ((python, True), (str(host / "no-python"), False)):
        reasons = scan(host, python=interpreter, env={"PATH": "/usr/bin:/bin"})["reasons"]
        assert (reasons == []) is unchanged, reasons
    assert reasons[0].startswith("the scan did not answer (%s, rc 127)" % (host / "no-python"))


def test_the_scan_checks_the_recorded_probes_and_packages(host):
    flag = host / "flag"
    flag.write_text("joined\n")
    packages = ["dpkg"] if os.path.exists("/usr/bin/dpkg-query") else []
    record(host, declared(host, probes=[["cat", str(flag)]], packages=packages))
    mark(host)
    assert scan(host)["unchanged"] is True
    flag.write_text("left\n")
    assert scan(host)["reasons"] == ["probe cat %s answers otherwise" % flag]
    flag.write_text("joined\n")
    if not packages:
        pytest.skip("no dpkg-query on this machine: the package check is Debian's")
    saved = json.loads((host / "records" / "app.json").read_text())
    saved["packages"] = ["dpkg", "sparkfleet-no-such-package"]
    (host / "records" / "app.json").write_text(json.dumps(saved))
    mark(host)
    assert scan(host)["reasons"] == ["package sparkfleet-no-such-package is not installed"]


def test_a_record_older_than_its_units_and_packages_gets_them_when_the_role_is_not_due(host):
    want = declared(host, units=[], packages=["dpkg"] if os.path.exists("/usr/bin/dpkg-query") else [])
    record(host, want)
    saved = json.loads((host / "records" / "app.json").read_text())
    del saved["units"], saved["packages"]
    (host / "records" / "app.json").write_text(json.dumps(saved))
    # Check mode writes nothing.
    args = {"state": "check", "path": str(host / "records"), "roles": {"app": want}, "_ansible_check_mode": True}
    assert run(args, host)["due"] == [] and "units" not in json.loads((host / "records" / "app.json").read_text())
    assert check(host, want)["due"] == []
    saved = json.loads((host / "records" / "app.json").read_text())
    assert [saved["units"], saved["packages"]] == [want["units"], want["packages"]]


def test_the_sources_change_with_what_inputs_come_from_and_only_that(action, monkeypatch):
    """The fingerprint covers the inventory's groups, each host's variables as written and the facts the
    code names; not the run's own groups, switches and results, nor facts no role reads."""
    from ansible.parsing.dataloader import DataLoader  # pylint: disable=import-outside-toplevel
    from ansible.template import Templar  # pylint: disable=import-outside-toplevel
    import types  # pylint: disable=import-outside-toplevel
    task = types.SimpleNamespace(args={"sources": True}, check_mode=False, async_val=0,
                                 action="sparkfleet.cluster.applied_state")
    plugin = action.ActionModule(task, None, None, DataLoader(), Templar(loader=DataLoader()), None)

    def sources(change=lambda v: None):
        facts = {"memtotal_mb": 4096, "uptime_seconds": 10, "default_ipv4": {"address": "10.0.0.2"},
                 "interfaces": ["eth0"], "eth0": {"ipv4": {"address": "10.0.0.2"}}, "all_ipv4_addresses": ["10.0.0.2"]}
        task_vars = {
            "groups": {"all": ["m", "w"], "spark_workers": ["w"], "sparkfleet_replaced": ["w"]},
            "hostvars": {"m": {"spark_version": "4.0.1", "ansible_host": "10.0.0.1", "ansible_facts": dict(facts)},
                         "w": {"spark_version": "4.0.1", "omit": "__omit_1", "__sparkfleet_applied": {"due": []},
                               "sparkfleet_run_group": "x", "ansible_facts": dict(facts)}},
        }
        change(task_vars)
        plugin._peers_seen = None  # as each run of the action starts  # pylint: disable=protected-access
        return plugin._sources(task_vars)  # pylint: disable=protected-access

    same = sources()
    assert sources() == same
    for unrelated in (lambda v: v["hostvars"]["w"].update(omit="__omit_2", sparkfleet_run_group="y"),
                      lambda v: v["hostvars"]["w"].update(__sparkfleet_applied={"due": ["java"]}),
                      lambda v: v["hostvars"]["m"]["ansible_facts"].update(uptime_seconds=99),
                      lambda v: v["groups"].update(sparkfleet_unchanged=["m"]),
                      # Docker's bridge, once the engine runs.
                      lambda v: v["hostvars"]["m"]["ansible_facts"].update(
                          interfaces=["eth0", "docker0"], docker0={"ipv4": {"address": "172.17.0.1"}},
                          all_ipv4_addresses=["10.0.0.2", "172.17.0.1"])):
        assert sources(unrelated) == same
    for related in (lambda v: v["hostvars"]["w"].update(spark_version="3.5.8"),
                    lambda v: v["hostvars"]["m"].update(ansible_host="10.0.0.9"),
                    lambda v: v["groups"].update(spark_workers=["w", "m"]),
                    lambda v: v["hostvars"]["m"]["ansible_facts"].update(memtotal_mb=8192),
                    lambda v: v["hostvars"]["w"]["ansible_facts"]["default_ipv4"].update(address="10.0.0.7"),
                    lambda v: v["hostvars"]["w"]["ansible_facts"]["eth0"]["ipv4"].update(address="10.0.0.7")):
        assert sources(related) != same
    monkeypatch.setenv("HOME", "/elsewhere")  # a lookup of the code reads it
    assert sources() != same


def test_a_variable_that_calls_a_lookup_enters_the_sources_as_what_it_reads(action, tmp_path):
    """A variable as written stands for its value, but for one that reads a file on the controller
    (a CA certificate kept beside the inventory): the file may change under the same text."""
    from ansible.parsing.dataloader import DataLoader  # pylint: disable=import-outside-toplevel
    from ansible.template import Templar  # pylint: disable=import-outside-toplevel
    from ansible.template import trust_as_template  # pylint: disable=import-outside-toplevel
    import types  # pylint: disable=import-outside-toplevel
    task = types.SimpleNamespace(args={"sources": True}, check_mode=False, async_val=0,
                                 action="sparkfleet.cluster.applied_state")
    plugin = action.ActionModule(task, None, None, DataLoader(), Templar(loader=DataLoader()), None)
    ca = tmp_path / "corporate-ca.crt"
    written = trust_as_template("{{ lookup('ansible.builtin.file', '%s') }}" % ca)

    def sources():
        plugin._peers_seen = None  # pylint: disable=protected-access
        return plugin._sources({"groups": {"all": ["m"]},  # pylint: disable=protected-access
                                "hostvars": {"m": {"extra_ca_certificates": [written]}}})

    ca.write_text("first\n")
    first = sources()
    assert sources() == first
    ca.write_text("second\n")
    assert sources() != first
