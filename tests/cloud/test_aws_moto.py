"""AWS end to end against a local EC2 emulator (moto server on 127.0.0.1).

The real playbooks (provision, teardown) and the real example inventory
(inventories/aws, the amazon.aws.aws_ec2 plugin) run against moto (its server, through
tests/cloud/moto_server.py); boto3 reads back what they made. Skipped, with the reason printed, when moto is not installed. (scale.yml's
numbering is shared by both providers and tested in test_gcp_provision.py.)

    pytest -q -rs tests/cloud/test_aws_moto.py
"""

import json
import os
import pathlib
import re
import socket
import subprocess
import sys
import time

import pytest
import yaml

moto = pytest.importorskip("moto", reason="moto[server] is not installed: pip install 'moto[server]' to run the AWS tests")
boto3 = pytest.importorskip("boto3", reason="boto3 is not installed")

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(sys.executable).parent
CLUSTER = "sparkfleet-aws"  # inventories/aws: the filter and sparkfleet_cluster_name
ADMIN = "203.0.113.0/24"
REGION = "us-east-1"
DEFAULTS = yaml.safe_load((ROOT / "roles/provision/defaults/main.yml").read_text())


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def moto_url():
    port = _free_port()
    # moto's server, with its one gap the role's rules meet filled (ESP without ports): moto_server.py.
    server = pathlib.Path(__file__).with_name("moto_server.py")
    proc = subprocess.Popen([sys.executable, str(server), "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail("moto server did not start")
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture(scope="module")
def ec2(moto_url):
    return boto3.client("ec2", region_name=REGION, endpoint_url=moto_url,
                        aws_access_key_id="testing", aws_secret_access_key="testing")


@pytest.fixture(scope="module")
def env(moto_url, tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    e = dict(os.environ)
    e.update({
        "HOME": str(home),  # the cluster's SSH key and credentials land here, not in the real home
        "PATH": f"{BIN}:{e.get('PATH', '')}",
        "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
        "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(home / "facts"),
        "ANSIBLE_FORCE_COLOR": "0",
        "ANSIBLE_NOCOLOR": "1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": REGION,
        "AWS_URL": moto_url,
        # moto hands out addresses of its default VPC, 172.31.0.0/16, which is also AWS's: a CI
        # machine in a default VPC has real neighbours there (one answered SSH and its host key
        # went into the cluster's known_hosts). A proxy command that fails keeps every converge of
        # these tests on this machine: each host is unreachable at once and nothing is sent.
        "ANSIBLE_SSH_EXTRA_ARGS": "-o ProxyCommand=false",
    })
    for k in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL"):
        e.pop(k, None)
    return e


@pytest.fixture(scope="module")
def extra(tmp_path_factory):
    path = tmp_path_factory.mktemp("vars") / "extra.json"
    path.write_text(json.dumps({
        "provision_admin_cidrs": [ADMIN],
        "provision_workers": 2,
        "provision_gpu_workers": 1,
        "provision_spot_roles": ["gpu_worker"],
        # moto has no Debian AMI: the lookup runs against one of its Ubuntu images.
        "provision_aws_image_owner": "099720109477",
        "provision_aws_image_name": "ubuntu/images/hvm-ssd/ubuntu-*",
        # Nothing is reached over SSH (the env fixture's failing proxy command).
        "provision_wait_for_connection": False,
    }))
    return path


def _playbook(env, extra, name, *args):
    cmd = [str(BIN / "ansible-playbook"), f"playbooks/{name}", "-i", "inventories/aws", "-e", f"@{extra}", *args]
    result = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    print(result.stdout[-6000:], result.stderr[-3000:])
    return result


def _recap(stdout):
    match = re.search(r"^localhost\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", stdout, re.M)
    assert match, "no play recap for localhost"
    return dict(zip(("ok", "changed", "unreachable", "failed"), map(int, match.groups())))


def _instances(ec2, **filters):
    flt = [{"Name": k, "Values": v if isinstance(v, list) else [v]} for k, v in filters.items()]
    out = []
    for reservation in ec2.describe_instances(Filters=flt)["Reservations"]:
        for inst in reservation["Instances"]:
            inst["TagMap"] = {t["Key"]: t["Value"] for t in inst.get("Tags", [])}
            out.append(inst)
    return out


def _alive(ec2, **filters):
    return _instances(ec2, **{"instance-state-name": ["pending", "running", "stopping", "stopped"], **filters})


def _cluster_names(ec2):
    return sorted(i["TagMap"]["Name"] for i in _alive(ec2, **{"tag:sparkfleet-cluster": CLUSTER}))


@pytest.fixture(scope="module")
def unrelated(ec2):
    """Machines and a security group that are not the cluster's: teardown must leave them."""
    image = ec2.describe_images(Owners=["099720109477"])["Images"][0]["ImageId"]
    other = ec2.run_instances(ImageId=image, MinCount=1, MaxCount=1, TagSpecifications=[{
        "ResourceType": "instance", "Tags": [{"Key": "Name", "Value": "other-worker-1"},
                                             {"Key": "sparkfleet-cluster", "Value": "other"},
                                             {"Key": "sparkfleet-role", "Value": "worker"}]}])["Instances"][0]
    plain = ec2.run_instances(ImageId=image, MinCount=1, MaxCount=1)["Instances"][0]
    group = ec2.create_security_group(GroupName="unrelated", Description="not the cluster's")["GroupId"]
    return {"instances": [other["InstanceId"], plain["InstanceId"]], "group": group}


EXPECTED = [f"{CLUSTER}-{n}" for n in ("gpu-worker-1", "hub", "master", "worker-1", "worker-2")]
ROLES = {"master": "master", "hub": "hub", "worker-1": "worker", "worker-2": "worker", "gpu-worker-1": "gpu_worker"}


def _ports(spec):
    """{(protocol, from, to)} from the role's port lists; (protocol, None, None) for one without ports."""
    out = set()
    for entry in spec:
        if "ports" not in entry:
            out.add((entry["protocol"], None, None))
        for port in entry.get("ports", []):
            low, _dash, high = str(port).partition("-")
            out.add((entry["protocol"], int(low), int(high or low)))
    return out


def test_a_refuses_a_world_open_admin_range_before_any_change(env, extra, ec2, unrelated):
    before = len(_instances(ec2))
    result = _playbook(env, extra, "provision.yml", "-e", '{"provision_admin_cidrs": ["0.0.0.0/0"]}')
    assert result.returncode != 0
    assert "provision_admin_cidrs" in result.stdout and "provision_allow_world" in result.stdout
    assert len(_instances(ec2)) == before
    assert ec2.describe_key_pairs()["KeyPairs"] == []


def test_b_provision_creates_the_tagged_machines_and_exact_rules(env, extra, ec2, unrelated):
    result = _playbook(env, extra, "provision.yml")
    assert result.returncode == 0
    assert _recap(result.stdout)["changed"] > 0
    machines = {i["TagMap"]["Name"]: i for i in _alive(ec2, **{"tag:sparkfleet-cluster": CLUSTER})}
    assert sorted(machines) == EXPECTED
    groups = {g["GroupName"]: g for g in ec2.describe_security_groups(
        Filters=[{"Name": "tag:sparkfleet-cluster", "Values": [CLUSTER]}])["SecurityGroups"]}
    assert sorted(groups) == [f"{CLUSTER}-admin", f"{CLUSTER}-cluster"]
    for suffix, role in ROLES.items():
        inst = machines[f"{CLUSTER}-{suffix}"]
        assert inst["TagMap"]["sparkfleet-role"] == role
        assert inst["InstanceType"] == DEFAULTS["provision_aws_instance_types"][role]
        assert inst["KeyName"] == CLUSTER
        assert sorted(g["GroupName"] for g in inst["SecurityGroups"]) == sorted(groups)
        # Spot through the cluster's launch template, for provision_spot_roles only.
        assert ("aws:ec2launchtemplate:id" in inst["TagMap"]) == (role == "gpu_worker")
        # IMDSv2 only, one hop: a container on the machine cannot fetch its credentials.
        options = inst["MetadataOptions"]
        assert (options["HttpTokens"], options["HttpPutResponseHopLimit"], options["HttpEndpoint"]) == ("required", 1, "enabled")
    template = ec2.describe_launch_templates(LaunchTemplateNames=[f"{CLUSTER}-spot"])["LaunchTemplates"][0]
    data = ec2.describe_launch_template_versions(LaunchTemplateId=template["LaunchTemplateId"])["LaunchTemplateVersions"][0]
    assert data["LaunchTemplateData"]["InstanceMarketOptions"]["MarketType"] == "spot"

    cluster = groups[f"{CLUSTER}-cluster"]
    rules = {(p["IpProtocol"], p.get("FromPort"), p.get("ToPort")) for p in cluster["IpPermissions"]}
    assert rules == _ports(DEFAULTS["provision_cluster_ports"])
    # Swarm's ports and ESP (IP protocol 50, encrypted overlay networks), from members only (below).
    assert {("tcp", 2377, 2377), ("tcp", 7946, 7946), ("udp", 7946, 7946), ("udp", 4789, 4789), ("50", None, None)} <= rules
    for p in cluster["IpPermissions"]:  # the cluster's ports: from the cluster's own group only
        assert p.get("IpRanges", []) == [] and p.get("Ipv6Ranges", []) == []
        assert [g["GroupId"] for g in p["UserIdGroupPairs"]] == [cluster["GroupId"]]
    admin = groups[f"{CLUSTER}-admin"]
    admin_rules = {(p["IpProtocol"], p["FromPort"], p["ToPort"], tuple(r["CidrIp"] for r in p["IpRanges"]))
                   for p in admin["IpPermissions"]}
    assert admin_rules == {("tcp", 22, 22, (ADMIN,)), ("tcp", 443, 443, (ADMIN,)), ("tcp", 8443, 8443, (ADMIN,))}
    assert all(p.get("UserIdGroupPairs", []) == [] for p in admin["IpPermissions"])


def test_c_a_second_run_creates_nothing(env, extra, ec2, unrelated):
    before = len(_instances(ec2))
    result = _playbook(env, extra, "provision.yml")
    assert result.returncode == 0
    assert _recap(result.stdout)["changed"] == 0
    assert len(_instances(ec2)) == before
    assert _cluster_names(ec2) == EXPECTED


def _plain(value):
    """ansible-inventory marks values from outside as unsafe: {"__ansible_unsafe": value}."""
    if isinstance(value, dict):
        if set(value) == {"__ansible_unsafe"}:
            return value["__ansible_unsafe"]
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _members(inventory, group):
    hosts = set(inventory.get(group, {}).get("hosts", []))
    for child in inventory.get(group, {}).get("children", []):
        hosts |= _members(inventory, child)
    return hosts


def test_d_the_inventory_groups_them_as_the_playbooks_expect(env, ec2, unrelated):
    run = subprocess.run([str(BIN / "ansible-inventory"), "-i", "inventories/aws", "--list"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120, check=True)
    inventory = _plain(json.loads(run.stdout))
    c = CLUSTER
    assert _members(inventory, "role_master") == {f"{c}-master"}
    assert _members(inventory, "role_worker") == {f"{c}-worker-1", f"{c}-worker-2"}
    assert _members(inventory, "role_gpu_worker") == {f"{c}-gpu-worker-1"}
    assert _members(inventory, "role_hub") == {f"{c}-hub"}
    # The component groups, from inventories/components.yml (linked in the directory).
    assert _members(inventory, "spark_masters") == {f"{c}-master"}
    assert _members(inventory, "spark_workers") == {f"{c}-worker-1", f"{c}-worker-2", f"{c}-gpu-worker-1"}
    assert _members(inventory, "gpu_workers") == {f"{c}-gpu-worker-1"}
    assert _members(inventory, "hub") == _members(inventory, "swarm_managers") == {f"{c}-hub"}
    assert _members(inventory, "all") == set(EXPECTED)  # not other-worker-1, not the untagged machine
    hostvars = inventory["_meta"]["hostvars"]
    for inst in _alive(ec2, **{"tag:sparkfleet-cluster": CLUSTER}):
        host = hostvars[inst["TagMap"]["Name"]]
        assert host["ansible_host"] == inst["PrivateIpAddress"]
        assert host["sparkfleet_cluster_name"] == CLUSTER
    graph = subprocess.run([str(BIN / "ansible-inventory"), "-i", "inventories/aws", "--graph", "spark_workers"],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True).stdout
    assert "@gpu_workers:" in graph and f"--{c}-gpu-worker-1" in graph


def test_e_replace_worker_recreates_the_machine_with_the_same_identity(env, extra, ec2, unrelated):
    name = f"{CLUSTER}-worker-2"
    (old,) = _alive(ec2, **{"tag:Name": name})
    # The cluster's known_hosts (provision.yml made the key pair beside it) holds the old
    # machine's host key and another host's: only the old machine's entry may go.
    (key,) = pathlib.Path(env["HOME"]).glob("**/ssh/id_ed25519.pub")
    known = key.parent / "known_hosts"
    kind, blob = key.read_text().split()[:2]
    known.write_text(f"{old['PrivateIpAddress']} {kind} {blob}\n10.255.0.9 {kind} {blob}\n")

    result = _playbook(env, extra, "replace_worker.yml", "-e", f"worker={name}")
    # No SSH leaves this machine (the env fixture's failing proxy command): the converge finds the
    # machines unreachable (rc 4).
    assert result.returncode == 4, result.stdout[-3000:]
    assert "Replacing " + name in result.stdout
    assert "UNREACHABLE" in result.stdout

    assert ec2.describe_instances(InstanceIds=[old["InstanceId"]])["Reservations"][0]["Instances"][0]["State"]["Name"] in (
        "shutting-down", "terminated")
    (new,) = _alive(ec2, **{"tag:Name": name})
    assert new["InstanceId"] != old["InstanceId"]
    assert new["InstanceType"] == old["InstanceType"]
    assert new["TagMap"] == old["TagMap"]
    assert _cluster_names(ec2) == EXPECTED
    assert known.read_text() == f"10.255.0.9 {kind} {blob}\n"


def test_f_teardown_needs_the_cluster_name(env, extra, ec2, unrelated):
    result = _playbook(env, extra, "teardown.yml")
    assert result.returncode != 0
    assert f"teardown_confirm={CLUSTER}" in result.stdout
    assert _cluster_names(ec2) == EXPECTED


def test_g_teardown_removes_the_cluster_and_nothing_else(env, extra, ec2, unrelated):
    result = _playbook(env, extra, "teardown.yml", "-e", f"teardown_confirm={CLUSTER}")
    assert result.returncode == 0
    assert _cluster_names(ec2) == []
    assert ec2.describe_security_groups(Filters=[{"Name": "tag:sparkfleet-cluster", "Values": [CLUSTER]}])["SecurityGroups"] == []
    assert [k["KeyName"] for k in ec2.describe_key_pairs()["KeyPairs"]] == []
    assert ec2.describe_launch_templates()["LaunchTemplates"] == []
    survivors = _instances(ec2, **{"instance-id": unrelated["instances"]})
    assert sorted(i["State"]["Name"] for i in survivors) == ["running", "running"]
    assert ec2.describe_security_groups(GroupIds=[unrelated["group"]])["SecurityGroups"]
