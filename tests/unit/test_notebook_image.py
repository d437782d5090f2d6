"""The notebook_image role's recipe (Dockerfile and kernel), rendered with Ansible's own templating
from the role's defaults and vars: what goes into the image, and that the tag follows the recipe."""
import json
import pathlib

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template
from conftest import role_vars

ROLE = pathlib.Path(__file__).resolve().parents[2] / "roles" / "notebook_image"


def templar(**overrides):
    variables = {"ansible_managed": "Ansible managed", "groups": {"hub": ["hub1"]}, "registry_address": "hub1:5000"}
    variables.update(role_vars("notebook_image"))
    variables.update(overrides)
    loader = DataLoader()
    loader.set_basedir(str(ROLE))
    return Templar(loader=loader, variables=variables)


def render(name, **overrides):
    return templar(**overrides).template(trust_as_template((ROLE / "templates" / name).read_text()))


def test_default_recipe_is_the_full_pyspark_with_a_jre_from_the_base_image():
    dockerfile = render("Dockerfile.j2")
    assert dockerfile.splitlines()[2] == "FROM sparkfleet/debian12-systemd:latest"
    assert '"pyspark==3.5.8"' in dockerfile
    assert "openjdk-17-jre-headless" in dockerfile
    assert '"jupyterhub==5.3.0"' in dockerfile and '"jupyterlab==4.4.9"' in dockerfile
    # pip trusts the system store (the site's extra CAs), not certifi's bundle.
    assert "PIP_CERT=/etc/ssl/certs/ca-certificates.crt" in dockerfile
    assert 'CMD ["jupyterhub-singleuser"]' in dockerfile


def test_spark_connect_client_recipe_has_no_jvm():
    dockerfile = render("Dockerfile.j2", notebook_image_pyspark_package="pyspark-client",
                        notebook_image_pyspark_version="4.0.1", notebook_image_java=False)
    assert '"pyspark-client==4.0.1"' in dockerfile
    assert "pyspark==" not in dockerfile
    assert "openjdk" not in dockerfile


def image_ref(**overrides):
    """__notebook_image_ref as the role computes it, from the recipe rendered with these variables
    (the role renders the templates with a lookup; here they are rendered directly)."""
    recipe = {"__notebook_image_dockerfile": render("Dockerfile.j2", **overrides),
              "__notebook_image_kernel": render("kernel.json.j2", **overrides)}
    return templar(**overrides, **recipe).template(trust_as_template("{{ __notebook_image_ref }}"))


def test_the_tag_is_the_recipes_hash_and_the_image_goes_to_the_hub_registry():
    plain = image_ref()
    client = image_ref(notebook_image_pyspark_package="pyspark-client", notebook_image_pyspark_version="4.0.1",
                       notebook_image_java=False)
    assert plain.startswith("hub1:5000/sparkfleet/notebook:") and len(plain.rsplit(":", 1)[1]) == 12
    assert client.startswith("hub1:5000/sparkfleet/notebook:") and client != plain
    # The same recipe, the same tag (a second run builds nothing); no registry keeps it on the hub's engine.
    assert image_ref() == plain
    assert image_ref(registry_address="").startswith("sparkfleet/notebook:")


def test_kernel_reaches_the_clusters_spark_connect_as_the_notebooks_own_user():
    remote = "sc://m1:15002/;use_ssl=true;token=${JUPYTERHUB_API_TOKEN};user_id=${JUPYTERHUB_USER}"
    kernel = json.loads(render("kernel.json.j2", sparkfleet_notebook_spark_remote=remote))
    # Jupyter fills these in from the server's environment when the kernel starts: the server's own
    # API token (revoked when it stops) and its user; no cluster-wide token is written anywhere.
    assert kernel["env"]["SPARK_REMOTE"] == "sc://m1:15002/;use_ssl=true;token=${JUPYTERHUB_API_TOKEN};user_id=${JUPYTERHUB_USER}"
    assert kernel["env"]["GRPC_DEFAULT_SSL_ROOTS_FILE_PATH"] == "/etc/ssl/certs/ca-certificates.crt"
    assert kernel["display_name"] == "PySpark (cluster)"


def test_without_spark_connect_the_kernel_gets_no_remote_and_settings_win():
    assert json.loads(render("kernel.json.j2"))["env"] == {}
    kernel = json.loads(render("kernel.json.j2", sparkfleet_notebook_spark_remote="sc://m1:15002/;use_ssl=true",
                               notebook_image_kernel_env={"SPARK_REMOTE": "sc://other:15002"}))
    assert kernel["env"]["SPARK_REMOTE"] == "sc://other:15002"


def test_the_image_trusts_the_cluster_ca_and_its_tag_follows_it():
    dockerfile = render("Dockerfile.j2")
    assert "COPY cluster-ca.crt /usr/local/share/ca-certificates/sparkfleet-cluster-ca.crt" in dockerfile
    # The CA comes after the install steps (the controller's cached copy serves every cluster).
    assert dockerfile.index("COPY kernel.json") < dockerfile.index("COPY cluster-ca.crt")
    ca = {"content": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg=="}
    recipe = templar(__notebook_image_ca_file=ca).template(trust_as_template("{{ __notebook_image_ca }}"))
    assert recipe.startswith("-----BEGIN CERTIFICATE-----")


def cache_names(base_id="sha256:aaaa", **overrides):
    """The controller copy's image name and archive (notebook_image_controller_cache), as the role
    computes them from the rendered recipe and the base image's ID on the hub."""
    recipe = {"__notebook_image_dockerfile": render("Dockerfile.j2", **overrides),
              "__notebook_image_kernel": render("kernel.json.j2", **overrides),
              "__notebook_image_base_on_hub": {"images": [{"Id": base_id}]},
              "sparkfleet_download_cache_dir": "/cache"}
    # The archive's directory falls back on a lookup (the controller's HOME): builtin plugins by FQCN.
    from ansible.plugins.loader import init_plugin_loader  # pylint: disable=import-outside-toplevel
    init_plugin_loader([])
    t = templar(**overrides, **recipe)
    return tuple(t.template(trust_as_template(f"{{{{ {name} }}}}"))
                 for name in ("__notebook_image_install_steps", "__notebook_image_cache_image",
                              "__notebook_image_cache_archive"))


def test_the_controller_copy_is_the_install_steps_named_by_base_and_steps_not_by_the_kernel():
    steps, image, archive = cache_names()
    # The install steps: the whole recipe up to the kernel, none of the cluster's own settings.
    assert "pip install" in steps and "FROM sparkfleet/debian12-systemd:latest" in steps
    assert "kernel" not in steps and "CMD" not in steps
    key = image.rsplit(":", 1)[1]
    assert image == f"sparkfleet/notebook-cache:{key}" and len(key) == 12
    assert archive == f"/cache/sparkfleet_notebook-cache-{key}.tar"
    # Another cluster's kernel (its Spark Connect address): the same copy serves it.
    assert cache_names(notebook_image_kernel_env={"SPARK_REMOTE": "sc://other:15002"})[1] == image
    # Other install steps or another base image: another copy.
    assert cache_names(notebook_image_java=False)[1] != image
    assert cache_names(base_id="sha256:bbbb")[1] != image


def test_the_playbooks_compose_the_notebooks_remote_from_the_first_masters_address():
    """playbooks/group_vars/all/sparkfleet.yml: the endpoint by the master's address (a notebook
    container may not resolve host names), with the notebook server's own token and user."""
    import yaml  # pylint: disable=import-outside-toplevel

    group_vars = yaml.safe_load((ROLE.parents[1] / "playbooks" / "group_vars" / "all" / "sparkfleet.yml").read_text())
    master = {"spark_connect_enabled": True, "ansible_facts": {"default_ipv4": {"address": "10.0.0.9"}}}
    variables = {"groups": {"spark_masters": ["m1"]}, "hostvars": {"m1": master},
                 "sparkfleet_spark_remote": trust_as_template(group_vars["sparkfleet_spark_remote"]),
                 "sparkfleet_notebook_spark_remote": trust_as_template(group_vars["sparkfleet_notebook_spark_remote"])}
    t = Templar(loader=DataLoader(), variables=variables)
    assert t.template(trust_as_template("{{ sparkfleet_notebook_spark_remote }}")) == (
        "sc://10.0.0.9:15002/;use_ssl=true;token=${JUPYTERHUB_API_TOKEN};user_id=${JUPYTERHUB_USER}")
    master["spark_connect_enabled"] = False
    t = Templar(loader=DataLoader(), variables=variables)
    assert t.template(trust_as_template("{{ sparkfleet_notebook_spark_remote }}")) == ""
