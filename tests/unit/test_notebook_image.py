"""The notebook_image role's recipe (Dockerfile and kernel), rendered from the role's defaults and
vars with the shared RoleRenderer: what goes into the image, and that the tag follows the recipe."""
import json

import yaml
from conftest import ROOT, RoleRenderer


def role(**overrides):
    return RoleRenderer("notebook_image", {"hub": ["hub1"]}, extra={"registry_address": "hub1:5000", **overrides})


def render(name, **overrides):
    return role(**overrides).render(name, "hub1")


def test_default_recipe_is_the_full_pyspark_with_a_jre_from_the_base_image():
    dockerfile = render("Dockerfile.j2")
    assert dockerfile.splitlines()[2] == "FROM sparkfleet/debian12-systemd:latest"
    assert '"pyspark==3.5.8"' in dockerfile
    assert "openjdk-17-jre-headless" in dockerfile
    # The single-user server speaks its hub's API: the hub's JupyterHub, as the jupyterhub role installs it.
    hub = RoleRenderer("jupyterhub", {"hub": ["hub1"]}).value("jupyterhub_version", "hub1")
    assert f'"jupyterhub=={hub}"' in dockerfile and '"jupyterlab==4.4.9"' in dockerfile
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
    """__notebook_image_ref as the role computes it, from the recipe its template lookups render
    with these variables."""
    return role(**overrides).value("__notebook_image_ref", "hub1")


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
    recipe = role(__notebook_image_ca_file=ca).value("__notebook_image_ca", "hub1")
    assert recipe.startswith("-----BEGIN CERTIFICATE-----")


def cache_names(base_id="sha256:aaaa", **overrides):
    """The controller copy's image name and archive (notebook_image_controller_cache), as the role
    computes them from the rendered recipe and the base image's ID on the hub."""
    renderer = role(**overrides, __notebook_image_base_on_hub={"images": [{"Id": base_id}]},
                    sparkfleet_download_cache_dir="/cache")
    return tuple(renderer.value(name, "hub1") for name in ("__notebook_image_install_steps", "__notebook_image_cache_image",
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
    group_vars = yaml.safe_load((ROOT / "playbooks" / "group_vars" / "all" / "sparkfleet.yml").read_text())

    def remote(connect_enabled):
        master = {"spark_connect_enabled": connect_enabled, "ansible_facts": {"default_ipv4": {"address": "10.0.0.9"}}}
        # As the roles that read it see it (their defaults hold the cluster-wide ones).
        inventory = RoleRenderer("jupyterhub", groups={"spark_masters": ["m1"], "hub": ["hub1"]}, hostvars={"m1": master},
                                 extra=group_vars)
        return inventory.value("sparkfleet_notebook_spark_remote", "hub1")

    assert remote(True) == "sc://10.0.0.9:15002/;use_ssl=true;token=${JUPYTERHUB_API_TOKEN};user_id=${JUPYTERHUB_USER}"
    assert remote(False) == ""
