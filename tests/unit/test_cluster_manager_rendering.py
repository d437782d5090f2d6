"""Render a role's templates the way Ansible does, from the role's OWN defaults and vars.

`RoleRenderer` loads roles/<role>/defaults/main.yml and vars/main.yml (their templated values
stay templates, resolved lazily as Ansible does), adds an inventory (groups, hostvars, facts)
and renders a template for one host with Ansible's Templar, the collection's filters by FQCN
and the role's templates directory as search path (for {% include %}). The hadoop, livy and
mesos template tests import it; the tests below check the shared master-URL rule through it.
"""

import configparser
import pathlib
import xml.etree.ElementTree as ET

import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from conftest import load_plugin

ROOT = pathlib.Path(__file__).resolve().parents[2]
FILTER_PLUGINS = ("spark_sizing", "cluster_manager", "artifacts", "gpu_shares", "addresses")


def _trust(value):
    if isinstance(value, str):
        return trust_as_template(value) if "{" in value else value
    if isinstance(value, dict):
        return {k: _trust(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_trust(v) for v in value]
    return value


def facts(vcpus=4, memory_mb=16384, address="10.0.0.5"):
    return {"processor_vcpus": vcpus, "memtotal_mb": memory_mb, "default_ipv4": {"address": address},
            "distribution": "Debian", "distribution_major_version": "12"}


class RoleRenderer:
    def __init__(self, role, groups, hostvars=None, extra=None):
        base = ROOT / "roles" / role
        self.templates = base / "templates"
        self.variables = {}
        for part in ("defaults", "vars"):
            path = base / part / "main.yml"
            if path.exists():
                self.variables.update(_trust(yaml.safe_load(path.read_text()) or {}))
        self.variables.update(_trust(extra or {}))
        hosts = sorted({h for members in groups.values() for h in members})
        self.groups = {"all": hosts, **groups}
        self.hostvars = {h: {"inventory_hostname": h, "ansible_facts": facts()} for h in hosts}
        for host, values in (hostvars or {}).items():
            self.hostvars[host].update(values)

    def templar(self, host):
        variables = dict(self.variables)
        variables.update(self.hostvars[host])
        variables.update(groups=self.groups, hostvars=self.hostvars, inventory_hostname=host,
                         ansible_managed="Ansible managed")
        templar = Templar(loader=DataLoader(), variables=variables).copy_with_new_env(searchpath=[str(self.templates)])
        filters = templar._engine.environment.filters  # pylint: disable=protected-access
        for name in FILTER_PLUGINS:
            for fname, func in load_plugin("filter", name).FilterModule().filters().items():
                filters[f"sparkfleet.cluster.{fname}"] = func
        return templar

    def render(self, template, host):
        return self.templar(host).template(trust_as_template((self.templates / template).read_text()))

    def value(self, expression, host):
        return self.templar(host).template(trust_as_template("{{ " + expression + " }}"))


def xml_properties(text):
    """A Hadoop *-site.xml as a dict; a property set twice fails."""
    props = {}
    for prop in ET.fromstring(text.encode()).findall("property"):
        name, value = prop.findtext("name"), prop.findtext("value")
        assert name not in props, f"{name} set twice"
        props[name] = value
    return props


def ini_sections(text):
    """container-executor.cfg: top-level keys under section '', then [gpu], [cgroups], ..."""
    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str
    parser.read_string("[top]\n" + text)
    return {("" if s == "top" else s): dict(parser[s]) for s in parser.sections()}


def hocon_properties(text):
    """livy.conf: `key = value` lines (the subset of HOCON Livy's templates use); a key set twice fails."""
    props = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        assert sep, f"not a property: {line!r}"
        key = key.strip()
        assert key not in props, f"{key} set twice"
        props[key] = value.strip()
    return props


# --- The master URL, one rule for spark.master and livy.spark.master -----------------

CLUSTER = {"spark_masters": ["m1"], "spark_workers": ["w1"], "livy": ["m1"], "mesos_masters": ["m1"],
           "mesos_agents": ["w1"]}


def test_livy_uses_the_standalone_master_by_default():
    renderer = RoleRenderer("livy", CLUSTER)
    assert renderer.value("__livy_spark_master", "m1") == "spark://m1:7077"


def test_livy_follows_the_cluster_manager():
    assert RoleRenderer("livy", CLUSTER, extra={"spark_cluster_manager": "yarn"}).value("__livy_spark_master", "m1") == "yarn"
    mesos = RoleRenderer("livy", CLUSTER, extra={"spark_cluster_manager": "mesos"})
    assert mesos.value("__livy_spark_master", "m1") == "mesos://m1:5050"
    zk = RoleRenderer("livy", CLUSTER,
                      extra={"spark_cluster_manager": "mesos", "mesos_zookeeper_url": "zk://m1:2181,m2:2181/mesos"})
    assert zk.value("__livy_spark_master", "m1") == "mesos://zk://m1:2181,m2:2181/mesos"


def test_mesos_role_builds_the_zookeeper_url_from_its_masters():
    renderer = RoleRenderer("mesos", {"mesos_masters": ["m1", "m2", "m3"], "mesos_agents": ["w1"]},
                            extra={"mesos_zookeeper_enabled": True})
    assert renderer.value("mesos_zookeeper_url", "m1") == "zk://m1:2181,m2:2181,m3:2181/mesos"
    assert str(renderer.value("__mesos_quorum", "m1")) == "2"
    single = RoleRenderer("mesos", {"mesos_masters": ["m1"], "mesos_agents": ["w1"]})
    assert single.value("mesos_zookeeper_url", "m1") == ""
    assert single.value("__mesos_master_url", "w1") == "m1:5050"
