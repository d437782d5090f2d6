"""The jupyterhub role's jupyterhub_config.py and nginx site: rendered from the role's defaults and
vars with the shared RoleRenderer, then the configuration EXECUTED against a stand-in for
JupyterHub's `c` object, and its settings checked."""

import asyncio
import importlib.util
import sys
import types
from unittest import mock

import pytest
import yaml
from conftest import ROOT, RoleRenderer

ROLE = ROOT / "roles" / "jupyterhub"
CULLER_SCOPES = {"list:users", "read:users:activity", "read:servers", "delete:servers"}
# The users' homes on shared storage (jupyterhub_home_root's default), on by default with docker and swarm.
HOME = {"/srv/sparkfleet/shared/home/{raw_username}": {"bind": "/home/jovyan", "mode": "rw"}}


# The hub host and its facts.
GROUPS = {"hub": ["hub1"]}
HOSTVARS = {"hub1": {"ansible_facts": {"fqdn": "hub1.example.org", "default_ipv4": {"address": "10.0.0.5"},
                                       "all_ipv6_addresses": []}}}


class Section:
    """One configurable class of `c` (c.JupyterHub, c.SwarmSpawner, ...)."""

    def __init__(self):
        object.__setattr__(self, "values", {})

    def __setattr__(self, name, value):
        self.values[name] = value

    def __getattr__(self, name):
        try:
            return self.values[name]
        except KeyError:
            raise AttributeError(name) from None


class FakeConfig:
    def __init__(self):
        object.__setattr__(self, "sections", {})

    def __getattr__(self, name):
        return self.sections.setdefault(name, Section())

    def set(self, section):
        """The names set on a section (empty if the configuration never touched it)."""
        return dict(self.sections[section].values) if section in self.sections else {}


def render(name, **overrides):
    return RoleRenderer("jupyterhub", GROUPS, hostvars=HOSTVARS, extra=overrides).render(name, "hub1")


@pytest.fixture()
def secrets_dir(tmp_path):
    for name, value in {"cookie_secret": "ab" * 32, "proxy_auth_token": "proxy-token-value",
                        "github_client_secret": "github-secret-value", "prometheus_token": "prometheus-token-value",
                        "gpu_hours_token": "gpu-hours-token-value"}.items():
        (tmp_path / name).write_text(value + "\n")
    return tmp_path


class FakeSwarmSpawner:
    """Stand-in for dockerspawner.SwarmSpawner: the Docker API answers the test gives it."""

    port = 8888
    service_name = "jupyter-alice"

    def __init__(self, task, nodes):
        self.task, self.nodes = task, nodes

    async def get_task(self):
        return self.task

    async def docker(self, method, *args):
        assert method == "inspect_node"
        return self.nodes[args[0]]

    async def start(self):
        return "started"


class FakeDockerSpawner(FakeSwarmSpawner):
    """Stand-in for dockerspawner.DockerSpawner."""


class FakeHTTPError(Exception):
    def __init__(self, status, message):
        super().__init__(status, message)
        self.status_code, self.log_message = status, message


def load(secrets_dir, **overrides):
    text = render("jupyterhub_config.py.j2", __jupyterhub_secrets_dir=str(secrets_dir), **overrides)
    c = FakeConfig()
    dockerspawner = types.ModuleType("dockerspawner")
    dockerspawner.SwarmSpawner = FakeSwarmSpawner
    dockerspawner.DockerSpawner = FakeDockerSpawner
    tornado = types.ModuleType("tornado")
    tornado.web = types.SimpleNamespace(HTTPError=FakeHTTPError)
    # The role installs its module beside the configuration; here it is read from the role.
    spec = importlib.util.spec_from_file_location("sparkfleet_profiles", ROLE / "files" / "sparkfleet_profiles.py")
    profiles = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(profiles)
    modules = {"dockerspawner": dockerspawner, "tornado": tornado, "tornado.web": tornado.web, "sparkfleet_profiles": profiles}
    with mock.patch.dict(sys.modules, modules), mock.patch.object(sys, "path", list(sys.path)):
        exec(compile(text, "jupyterhub_config.py", "exec"), {"get_config": lambda: c})  # noqa: S102 - the point of the test
    return c, text


def start(c, groups=(), admin=False, profile=None):
    """Start a server with the configured spawner class, as the hub does after the spawn page: the
    settings the chosen size gave it (its instance attributes)."""
    spawner = c.set("JupyterHub")["spawner_class"](None, {})
    spawner.user = types.SimpleNamespace(name="alice", admin=admin, groups=[types.SimpleNamespace(name=g) for g in groups])
    spawner.user_options = {} if profile is None else {"profile": profile}
    spawner.log = mock.Mock()
    assert asyncio.run(spawner.start()) == "started"
    return {k: v for k, v in vars(spawner).items() if k not in ("task", "nodes", "user", "user_options", "log")}


def form(c, groups=(), admin=False):
    user = types.SimpleNamespace(name="alice", admin=admin, groups=[types.SimpleNamespace(name=g) for g in groups])
    spawner = types.SimpleNamespace(user=user)
    return c.set("Spawner")["options_form"](spawner)


SWARM_GITHUB = {
    "jupyterhub_spawner": "swarm",
    "jupyterhub_authenticator": "github",
    "jupyterhub_github_url": "https://ghe.example.org",
    "jupyterhub_github_client_id": "client-id-1",
    "jupyterhub_github_allowed_organizations": ["tutorial-org", "staff-org:mentors"],
    "jupyterhub_admin_users": ["mae"],
    "registry_address": "hub1:5443",
    "jupyterhub_gpu_shares": 1,
    "jupyterhub_swarm_constraints": ["node.role == worker"],
    "jupyterhub_cpu_limit": 4,
    "jupyterhub_mem_limit": "12G",
    "jupyterhub_volumes": [
        {"host_path": "/efs/CFIW-Tutorials", "mount_path": "/home/jovyan/shared/CFIW-Tutorials", "mode": "ro"},
        {"host_path": "/efs/dataset", "mount_path": "/home/jovyan/shared/dataset", "mode": "rw"},
    ],
}


def test_swarm_github_seed(secrets_dir):
    c, text = load(secrets_dir, **SWARM_GITHUB)
    hub = c.set("JupyterHub")
    assert hub["spawner_class"].__name__ == "NodePortSwarmSpawner"
    assert issubclass(hub["spawner_class"], FakeSwarmSpawner)
    assert hub["authenticator_class"] == "oauthenticator.github.GitHubOAuthenticator"

    gh = c.set("GitHubOAuthenticator")
    assert gh["github_url"] == "https://ghe.example.org"
    assert gh["client_id"] == "client-id-1"
    assert gh["client_secret"] == "github-secret-value"
    assert gh["oauth_callback_url"] == "https://hub1.example.org/hub/oauth_callback"
    assert gh["allowed_organizations"] == {"tutorial-org", "staff-org:mentors"}
    assert gh["scope"] == ["read:org"]

    auth = c.set("Authenticator")
    assert auth["allow_all"] is False
    assert auth["allow_existing_users"] is False
    assert auth["allowed_users"] == set()
    assert auth["admin_users"] == {"mae"}

    swarm = c.set("SwarmSpawner")
    image = "hub1:5443/sparkfleet/notebook:latest"
    assert swarm["image"] == image
    assert swarm["allowed_images"] == [image]
    assert swarm["network_name"] == "sparkfleet-notebooks"
    assert swarm["volumes"] == {
        **HOME,
        "/efs/CFIW-Tutorials": {"bind": "/home/jovyan/shared/CFIW-Tutorials", "mode": "ro"},
        "/efs/dataset": {"bind": "/home/jovyan/shared/dataset", "mode": "rw"},
    }
    # One size (no jupyterhub_profiles): no spawn page; each server gets the limits and one GPU share,
    # of the kind the GPU workers advertise, placed on GPU nodes.
    assert form(c) == ""
    assert start(c) == {"cpu_limit": 4.0, "mem_limit": "12G",
                        "extra_resources_spec": {"generic_resources": {"NVIDIA-GPU": 1}},
                        "extra_placement_spec": {"constraints": ["node.role == worker", "node.labels.gpu == true"]}}
    # The hub on the manager host reaches each server on its node: the port published there (host mode).
    assert swarm["use_internal_ip"] is False
    assert swarm["port"] == 8888
    assert swarm["extra_endpoint_spec"] == {"ports": [{"TargetPort": 8888, "Protocol": "tcp", "PublishMode": "host"}]}
    # The users' code runs without capabilities.
    assert swarm["extra_container_spec"] == {"cap_drop": ["ALL"]}
    assert "DockerSpawner" not in c.sections

    # The hub's API on the host's address (the workers' containers call back), the proxy's
    # public side and its API on loopback only, secrets from the 0600 files, none in the file.
    assert hub["hub_bind_url"] == "http://10.0.0.5:8081"
    assert hub["hub_connect_url"] == "http://10.0.0.5:8081"
    assert hub["bind_url"] == "http://127.0.0.1:8000"
    proxy = c.set("ConfigurableHTTPProxy")
    assert proxy["api_url"] == "http://127.0.0.1:8001"
    assert proxy["auth_token"] == "proxy-token-value"
    assert proxy["should_start"] is False  # its own unit, jupyterhub-proxy
    assert hub["cookie_secret_file"] == str(secrets_dir / "cookie_secret")
    for secret in ("proxy-token-value", "github-secret-value", "ab" * 32):
        assert secret not in text


def test_culler_service_has_only_the_scopes_it_needs(secrets_dir):
    c, _text = load(secrets_dir, **SWARM_GITHUB, jupyterhub_idle_culler_timeout=1800, jupyterhub_idle_culler_every=60)
    hub = c.set("JupyterHub")
    (service,) = [s for s in hub["services"] if s["name"] not in ("prometheus", "gpu-hours")]
    assert service["name"] == "jupyterhub-idle-culler"
    assert service["command"][:3] == ["/opt/jupyterhub/venv/bin/python3", "-m", "jupyterhub_idle_culler"]
    assert "--timeout=1800" in service["command"]
    assert "--cull-every=60" in service["command"]
    assert "api_token" not in service and "admin" not in service
    (role,) = [r for r in hub["load_roles"] if r["name"] not in ("prometheus", "gpu-hours")]
    assert role["services"] == ["jupyterhub-idle-culler"]
    assert set(role["scopes"]) == CULLER_SCOPES
    assert not any(s.startswith("admin") for s in role["scopes"])


def test_culler_off(secrets_dir):
    c, _text = load(secrets_dir, **SWARM_GITHUB, jupyterhub_idle_culler_enabled=False, monitoring_enabled=False)
    assert {s["name"] for s in c.set("JupyterHub")["services"]} == {"gpu-hours"}
    assert {r["name"] for r in c.set("JupyterHub")["load_roles"]} == {"gpu-hours"}


def test_the_gpu_hours_report_lists_users_and_groups_and_nothing_more(secrets_dir):
    c, text = load(secrets_dir, **SWARM_GITHUB, jupyterhub_idle_culler_enabled=False, monitoring_enabled=False)
    hub = c.set("JupyterHub")
    assert hub["services"] == [{"name": "gpu-hours", "api_token": "gpu-hours-token-value"}]
    assert hub["load_roles"] == [{"name": "gpu-hours", "description": "List the users and their groups for the GPU-hours report",
                                  "scopes": ["list:users", "read:users:groups"], "services": ["gpu-hours"]}]
    assert "gpu-hours-token-value" not in text


def test_prometheus_reads_the_metrics_with_a_token_of_its_own_and_nothing_more(secrets_dir):
    c, text = load(secrets_dir, **SWARM_GITHUB, jupyterhub_idle_culler_enabled=False)
    hub = c.set("JupyterHub")
    assert [s for s in hub["services"] if s["name"] == "prometheus"] == [{"name": "prometheus", "api_token": "prometheus-token-value"}]
    assert [r for r in hub["load_roles"] if r["name"] == "prometheus"] == [
        {"name": "prometheus", "description": "Read the hub's metrics", "scopes": ["read:metrics"], "services": ["prometheus"]}]
    assert "prometheus-token-value" not in text
    # Not monitored: no such service, and its token is not read.
    (secrets_dir / "prometheus_token").unlink()
    c, _text = load(secrets_dir, **SWARM_GITHUB, monitoring_enabled=False)
    assert {s["name"] for s in c.set("JupyterHub")["services"]} == {"jupyterhub-idle-culler", "gpu-hours"}


def test_swarm_without_gpu_reserves_nothing(secrets_dir):
    variables = {**SWARM_GITHUB, "jupyterhub_gpu_shares": 0, "jupyterhub_swarm_constraints": [],
                 "jupyterhub_gpu_kind": "AMD-GPU"}
    c, _text = load(secrets_dir, **variables)
    started = start(c)
    assert started["extra_resources_spec"] == {}
    assert started["extra_placement_spec"] == {"constraints": []}


def test_gpu_kind_follows_the_container_toolkit(secrets_dir):
    variables = {**SWARM_GITHUB, "jupyterhub_gpu_shares": 2}
    c, _text = load(secrets_dir, **variables, nvidia_container_toolkit_swarm_resource_kind="gpu.share")
    assert start(c)["extra_resources_spec"] == {"generic_resources": {"gpu.share": 2}}


def test_docker_pam(secrets_dir):
    c, text = load(secrets_dir, jupyterhub_spawner="docker", jupyterhub_authenticator="pam",
                   jupyterhub_allowed_users=["alice", "bob"], jupyterhub_admin_users=["root-admin"],
                   jupyterhub_allowed_images=["hub1:5443/sparkfleet/notebook:1.2", "hub1:5443/sparkfleet/notebook:gpu"],
                   jupyterhub_volumes=[{"host_path": "/srv/shared", "mount_path": "/home/jovyan/shared", "mode": "rw"}])
    hub = c.set("JupyterHub")
    assert hub["spawner_class"].__name__ == "ProfileDockerSpawner"
    assert issubclass(hub["spawner_class"], FakeDockerSpawner)
    assert hub["authenticator_class"] == "jupyterhub.auth.PAMAuthenticator"
    assert c.set("PAMAuthenticator")["open_sessions"] is False
    assert c.set("Authenticator")["allowed_users"] == {"alice", "bob"}
    assert c.set("Authenticator")["admin_users"] == {"root-admin"}
    assert "GitHubOAuthenticator" not in c.sections
    assert "github" not in text.lower().replace("# authenticator pam", "")
    docker = c.set("DockerSpawner")
    assert docker["image"] == "hub1:5443/sparkfleet/notebook:1.2"
    assert docker["allowed_images"] == ["hub1:5443/sparkfleet/notebook:1.2", "hub1:5443/sparkfleet/notebook:gpu"]
    assert docker["network_name"] == "bridge"
    assert docker["use_internal_ip"] is True
    assert docker["remove"] is True
    assert docker["extra_host_config"] == {"cap_drop": ["ALL"], "security_opt": ["no-new-privileges"]}
    assert docker["volumes"] == {**HOME, "/srv/shared": {"bind": "/home/jovyan/shared", "mode": "rw"}}
    # Limits only: GPU shares and placement are the Swarm's.
    assert start(c) == {"cpu_limit": 2.0, "mem_limit": "4G"}
    assert "SwarmSpawner" not in c.sections
    assert hub["hub_bind_url"] == "http://10.0.0.5:8081"


def test_local_pam_fat_master(secrets_dir):
    c, _text = load(secrets_dir, jupyterhub_spawner="local", jupyterhub_authenticator="pam",
                    jupyterhub_allowed_users=["alice"], jupyterhub_volumes=[])
    hub = c.set("JupyterHub")
    assert hub["spawner_class"] == "jupyterhub.spawner.LocalProcessSpawner"
    assert hub["authenticator_class"] == "jupyterhub.auth.PAMAuthenticator"
    assert c.set("Spawner")["cmd"] == ["/opt/jupyterhub/venv/bin/jupyterhub-singleuser"]
    assert c.set("Spawner")["default_url"] == "/lab"
    assert c.set("Authenticator")["allowed_users"] == {"alice"}
    assert not {"DockerSpawner", "SwarmSpawner"} & set(c.sections)
    # Everything on the hub itself: the hub's API on loopback too.
    assert hub["hub_bind_url"] == "http://127.0.0.1:8081"
    assert {s["name"] for s in hub["services"]} == {"jupyterhub-idle-culler", "prometheus", "gpu-hours"}


def test_native_tls(secrets_dir):
    c, _text = load(secrets_dir, **SWARM_GITHUB, jupyterhub_tls_mode="native", jupyterhub_https_port=8443)
    hub = c.set("JupyterHub")
    assert hub["bind_url"] == "https://0.0.0.0:8443"
    assert hub["ssl_cert"] == "/etc/jupyterhub/tls/jupyterhub.crt"
    assert hub["ssl_key"] == "/etc/jupyterhub/tls/jupyterhub.key"
    assert c.set("GitHubOAuthenticator")["oauth_callback_url"] == "https://hub1.example.org:8443/hub/oauth_callback"
    assert c.set("ConfigurableHTTPProxy")["api_url"] == "http://127.0.0.1:8001"


def test_nginx_site_forwards_to_the_loopback_proxy():
    text = render("nginx-jupyterhub.conf.j2", jupyterhub_https_port=8443)
    lines = [line.strip() for line in text.splitlines()]
    assert "listen 8443 ssl http2;" in lines
    assert not any(line.startswith("listen 80") for line in lines)
    assert "proxy_pass http://127.0.0.1:8000;" in lines
    assert "ssl_certificate /etc/jupyterhub/tls/jupyterhub.crt;" in lines
    assert "proxy_set_header Upgrade $http_upgrade;" in lines


def _proxy_args(text):
    command = " ".join(line.strip().rstrip("\\") for line in text.splitlines() if not line.startswith("#"))
    args = command.split("exec ", 1)[1].split()
    return args[0], dict(zip(args[1::2], args[2::2]))


def test_proxy_service_listens_on_loopback_behind_nginx():
    text = render("configurable-http-proxy.sh.j2", **SWARM_GITHUB)
    command, args = _proxy_args(text)
    assert command == "/opt/jupyterhub/proxy/node_modules/.bin/configurable-http-proxy"
    assert args == {"--ip": "127.0.0.1", "--port": "8000", "--api-ip": "127.0.0.1", "--api-port": "8001",
                    "--default-target": "http://10.0.0.5:8081", "--error-target": "http://10.0.0.5:8081/hub/error"}
    # The token comes from the 0600 file at start, not from the script or a unit file.
    assert 'CONFIGPROXY_AUTH_TOKEN="$(cat /etc/jupyterhub/secrets/proxy_auth_token)"' in text


def test_proxy_service_serves_tls_itself_in_native_mode():
    _command, args = _proxy_args(render("configurable-http-proxy.sh.j2", jupyterhub_tls_mode="native",
                                        jupyterhub_https_port=443, jupyterhub_spawner="local"))
    assert args["--ip"] == "0.0.0.0" and args["--port"] == "443"
    assert args["--ssl-cert"] == "/etc/jupyterhub/tls/jupyterhub.crt"
    assert args["--ssl-key"] == "/etc/jupyterhub/tls/jupyterhub.key"
    assert args["--api-ip"] == "127.0.0.1"
    assert args["--default-target"] == "http://127.0.0.1:8081"


SPEC = yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"]


def test_only_real_authenticators_can_be_chosen():
    assert set(SPEC["jupyterhub_authenticator"]["choices"]) == {"github", "pam"}
    assert SPEC["jupyterhub_github_client_secret"].get("no_log") is True


@pytest.mark.parametrize("tls_mode", SPEC["jupyterhub_tls_mode"]["choices"])
@pytest.mark.parametrize("spawner", SPEC["jupyterhub_spawner"]["choices"])
@pytest.mark.parametrize("authenticator", SPEC["jupyterhub_authenticator"]["choices"])
def test_no_dummy_authenticator_no_open_signup_and_the_proxy_api_on_loopback(secrets_dir, authenticator, spawner,
                                                                             tls_mode):
    """Whatever the choices, the configuration JupyterHub runs lets nobody in unchecked: a real
    authenticator, nobody allowed by default, no self sign-up; the proxy's API on loopback only."""
    settings = {**SWARM_GITHUB, "jupyterhub_authenticator": authenticator, "jupyterhub_spawner": spawner,
                "jupyterhub_tls_mode": tls_mode}
    c, _text = load(secrets_dir, **settings)
    authenticator_class = c.set("JupyterHub")["authenticator_class"]
    assert authenticator_class in ("oauthenticator.github.GitHubOAuthenticator", "jupyterhub.auth.PAMAuthenticator")
    assert not [name for name in c.sections if "Dummy" in name]
    assert c.set("Authenticator").get("allow_all") is False
    assert not [name for name, section in c.sections.items() if "open_signup" in section.values]
    assert c.set("ConfigurableHTTPProxy")["api_url"] == "http://127.0.0.1:8001"
    _command, args = _proxy_args(render("configurable-http-proxy.sh.j2", **settings))
    assert args["--api-ip"] == "127.0.0.1"


def test_swarm_spawner_reaches_the_server_on_its_node(secrets_dir):
    """The spawner class the configuration defines answers <node address>, <port published on that node>, and
    says so when the task has no such port (the hub then reports a failed spawn instead of a wrong address)."""
    c, _text = load(secrets_dir, **SWARM_GITHUB)
    spawner_class = c.set("JupyterHub")["spawner_class"]
    nodes = {"node-2": {"Status": {"Addr": "10.0.0.7"}}}
    task = {"NodeID": "node-2", "Status": {"PortStatus": {"Ports": [
        {"Protocol": "tcp", "TargetPort": 9999, "PublishedPort": 31000, "PublishMode": "host"},
        {"Protocol": "tcp", "TargetPort": 8888, "PublishedPort": 32768, "PublishMode": "host"}]}}}
    assert asyncio.run(spawner_class(task, nodes).get_ip_and_port()) == ("10.0.0.7", 32768)
    unpublished = {"NodeID": "node-2", "Status": {"State": "running"}}
    with pytest.raises(RuntimeError, match="publishes no port 8888"):
        asyncio.run(spawner_class(unpublished, nodes).get_ip_and_port())
    with pytest.raises(RuntimeError, match="has no task"):
        asyncio.run(spawner_class(None, nodes).get_ip_and_port())


class FakeUser:
    name = "alice"


class FakeSpawnerForHook:
    user = FakeUser()
    log = mock.Mock()


class FakeHelper:
    """What asyncio.create_subprocess_exec returns: the helper's exit status and output."""

    def __init__(self, returncode, out=b"", err=b""):
        self.returncode, self.out, self.err = returncode, out, err

    async def communicate(self):
        return self.out, self.err


def _run_hook(hook, helper):
    calls = []

    async def fake_exec(*argv, **kwargs):
        calls.append(argv)
        return helper

    with mock.patch("asyncio.create_subprocess_exec", fake_exec):
        asyncio.run(hook(FakeSpawnerForHook()))
    return calls


@pytest.mark.parametrize(("spawner", "section"), [("swarm", "SwarmSpawner"), ("docker", "DockerSpawner")])
def test_home_on_shared_storage_by_default(secrets_dir, spawner, section):
    """Each user's home is <root>/<hub user name> from shared storage, read-write on the image's home, beside the
    shared folders; the hub has it created (sudo, the one helper) before each start."""
    c, _text = load(secrets_dir, **{**SWARM_GITHUB, "jupyterhub_spawner": spawner})
    assert c.set(section)["volumes"] == {**HOME,
                                         "/efs/CFIW-Tutorials": {"bind": "/home/jovyan/shared/CFIW-Tutorials", "mode": "ro"},
                                         "/efs/dataset": {"bind": "/home/jovyan/shared/dataset", "mode": "rw"}}
    # dockerspawner formats the host path with the hub's user name.
    (home_source,) = [k for k, v in c.set(section)["volumes"].items() if v["bind"] == "/home/jovyan"]
    assert home_source.format(raw_username="alice", username="alice") == "/srv/sparkfleet/shared/home/alice"
    hook = c.set("Spawner")["pre_spawn_hook"]
    calls = _run_hook(hook, FakeHelper(0, b"/srv/sparkfleet/shared/home/alice created\n"))
    assert calls == [("/usr/bin/sudo", "-n", "/usr/local/sbin/sparkfleet-notebook-home", "alice")]


def test_home_follows_the_notebook_image_user(secrets_dir):
    c, _text = load(secrets_dir, **{**SWARM_GITHUB, "jupyterhub_volumes": []}, jupyterhub_home_root="/nfs/homes",
                    notebook_image_user="scientist")
    assert c.set("SwarmSpawner")["volumes"] == {"/nfs/homes/{raw_username}": {"bind": "/home/scientist", "mode": "rw"}}


def test_home_helper_failure_stops_the_spawn_with_its_reason(secrets_dir):
    c, _text = load(secrets_dir, **SWARM_GITHUB)
    hook = c.set("Spawner")["pre_spawn_hook"]
    refused = FakeHelper(2, err=b"sparkfleet-notebook-home: /srv/sparkfleet/shared/home/alice exists and is not a real directory\n")
    with pytest.raises(RuntimeError, match="alice's home in /srv/sparkfleet/shared/home could not be prepared.*not a real directory"):
        _run_hook(hook, refused)
    with pytest.raises(RuntimeError, match="exit status 1"):
        _run_hook(hook, FakeHelper(1))


@pytest.mark.parametrize("overrides", [{"jupyterhub_home_root": ""}, {"jupyterhub_spawner": "local"}],
                         ids=["root-empty", "local"])
def test_no_home_volume_when_off_or_local(secrets_dir, overrides):
    c, text = load(secrets_dir, **{**SWARM_GITHUB, **overrides})
    for section in ("SwarmSpawner", "DockerSpawner"):
        assert "/home/jovyan" not in [v["bind"] for v in c.set(section).get("volumes", {}).values()]
    assert "pre_spawn_hook" not in c.set("Spawner")
    assert "sparkfleet-notebook-home" not in text


PROFILES = [
    {"name": "cpu", "display_name": "CPU only", "cpu_limit": 1, "mem_limit": "1G", "constraints": ["node.labels.gpu != true"]},
    {"name": "gpu-share", "display_name": "One GPU share", "gpu_shares": 1, "groups": ["gpu-users"]},
]


def test_users_choose_a_size_their_groups_allow_and_the_reservation_follows(secrets_dir):
    c, _text = load(secrets_dir, **SWARM_GITHUB, jupyterhub_profiles=PROFILES, jupyterhub_groups={"gpu-users": ["alice"]})
    assert c.set("JupyterHub")["load_groups"] == {"gpu-users": {"users": ["alice"]}}
    assert c.set("Spawner")["options_from_form"]({"profile": ["gpu-share"]}) == {"profile": "gpu-share"}
    # Outside the group: one size, no page; in it: a choice of two.
    assert form(c) == ""
    assert 'value="gpu-share"' in form(c, groups=["gpu-users"]) and 'value="cpu"' in form(c, groups=["gpu-users"])
    share = start(c, groups=["gpu-users"], profile="gpu-share")
    assert share == {"cpu_limit": 4.0, "mem_limit": "12G",
                     "extra_resources_spec": {"generic_resources": {"NVIDIA-GPU": 1}},
                     "extra_placement_spec": {"constraints": ["node.role == worker", "node.labels.gpu == true"]}}
    cpu = start(c, groups=["gpu-users"], profile="cpu")
    assert cpu == {"cpu_limit": 1.0, "mem_limit": "1G", "extra_resources_spec": {},
                   "extra_placement_spec": {"constraints": ["node.role == worker", "node.labels.gpu != true"]}}
    # A size outside the user's groups, posted by hand, is refused at start.
    with pytest.raises(FakeHTTPError, match="'gpu-share' is not one you may choose"):
        start(c, profile="gpu-share")
