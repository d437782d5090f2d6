"""The ui_gateway role: the gateway's nginx site and the UI ports' firewall, rendered from the
role's own defaults and vars."""

import re
import subprocess

import pytest

from conftest import RoleRenderer, debian_tool, facts

CLUSTER = {"spark_masters": ["m1"], "spark_workers": ["w1", "w2"], "notebook": ["nb1"]}
TLS = {"__ui_gateway_tls": {"certificate": "/etc/ssl/sparkfleet/ui-gateway.crt",
                            "key": "/etc/ssl/sparkfleet/ui-gateway.key"}}


def _host(address, v6=()):
    return {"ansible_facts": {**facts(address=address), "all_ipv4_addresses": [address],
                              "all_ipv6_addresses": list(v6)}}


HOSTVARS = {"m1": _host("10.0.0.1", ["fe80::1", "fd00::1"]), "w1": _host("10.0.0.2"), "w2": _host("10.0.0.3"),
            "nb1": _host("10.0.0.9")}


def gateway(**extra):
    return RoleRenderer("ui_gateway", CLUSTER, hostvars=HOSTVARS, extra={**TLS, **extra})


def code(text):
    """The lines that are not comments."""
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))


def locations(site):
    return re.findall(r"location ([^{]+)\{", site)


def test_the_login_guards_the_whole_server_and_no_location_turns_it_off():
    site = code(gateway().render("nginx-ui-gateway.conf.j2", "m1"))
    assert "listen 0.0.0.0:8443 ssl;" in site
    assert site.count("listen ") == 1
    assert "ssl_certificate     /etc/ssl/sparkfleet/ui-gateway.crt;" in site
    server_level = site.split("location", 1)[0]
    assert 'auth_basic           "sparkfleet";' in server_level
    assert "auth_basic_user_file /etc/nginx/sparkfleet-ui/htpasswd;" in server_level
    assert "auth_basic off" not in site and site.count("auth_basic ") == 1
    # return/rewrite answer before the access phase (the login): none may be used, but for the
    # refusal of a write another site started (a 403 that serves nothing).
    assert re.findall(r"^\s*(return|rewrite)\b.*$", site, re.M) == ["return"]


def test_the_master_and_history_sit_under_their_paths_on_loopback():
    site = code(gateway().render("nginx-ui-gateway.conf.j2", "m1"))
    assert [loc.strip() for loc in locations(site)] == [
        "= /", "= /spark", "/spark/", "= /history", "/history/"]
    assert site.count("proxy_pass http://127.0.0.1:8080/;") == 2
    assert site.count("proxy_pass http://127.0.0.1:18080/;") == 2
    assert site.count("proxy_set_header X-Forwarded-Context /history;") == 2
    assert "include /etc/nginx/sparkfleet-ui/locations/*.conf;" in site


def test_sparks_locations_send_the_clusters_token_where_spark_asks_for_it():
    # Spark 3.5 (the default spark_version): no JWSFilter, the user's login is passed as before.
    plain = code(gateway().render("nginx-ui-gateway.conf.j2", "m1"))
    assert "spark-authorization.conf" not in plain
    site = code(gateway(spark_version="4.0.1").render("nginx-ui-gateway.conf.j2", "m1"))
    blocks = re.findall(r"location ([^{]+)\{([^}]*)\}", site)
    with_token = [where.strip() for where, body in blocks
                  if "include /etc/nginx/sparkfleet-ui/spark-authorization.conf;" in body]
    assert with_token == ["= /spark", "/spark/", "= /history", "/history/"]
    # Only there: no other location (nor the server) passes the token on.
    assert site.count("spark-authorization.conf") == 4


def test_the_spark_path_follows_sparks_reverse_proxy_url_and_the_ports_follow_spark():
    renderer = gateway(spark_ui_reverse_proxy_url="https://ui.example.com/clusters/a/", spark_master_webui_port=9090,
                       spark_history_webui_port=19090, ui_gateway_port=443, spark_history_server_enabled=False)
    site = renderer.render("nginx-ui-gateway.conf.j2", "m1")
    assert "listen 0.0.0.0:443 ssl;" in site
    assert "location /clusters/a/ {" in site and "location = /clusters/a {" in site
    assert "proxy_pass http://127.0.0.1:9090/;" in site
    assert "/history" not in site and "19090" not in site
    assert renderer.value("ui_gateway_closed_ports | map('string') | list", "w1") == ["9090", "8081", "19090", "4040-4056"]


def test_the_port_map_and_the_certificate_names_follow_the_host():
    renderer = gateway()
    assert renderer.value("__ui_gateway_host_ports", "m1") == {"ui_gateway_port": 8443}
    assert renderer.value("__ui_gateway_host_ports", "w1") == {}
    assert renderer.value("__ui_gateway_tls_sans", "m1") == ["DNS:m1", "IP:10.0.0.1"]
    # Fixed per host: the password file changes only with the password.
    assert renderer.value("__ui_gateway_salt", "m1") == renderer.value("__ui_gateway_salt", "m1")
    assert re.fullmatch(r"[0-9a-f]{16}", renderer.value("__ui_gateway_salt", "m1"))


def nft_rules(**extra):
    return code(gateway(**extra).render("ui-firewall.nft.j2", "w1"))


def test_the_firewall_replaces_only_its_own_table_and_drops_only_the_ui_ports_from_outside():
    rules = nft_rules()
    assert "flush" not in rules
    assert re.findall(r"^(?:table|delete table) .*$", rules, re.M) == [
        "table inet sparkfleet_ui", "delete table inet sparkfleet_ui", "table inet sparkfleet_ui {"]
    assert "elements = { 8080, 8081, 18080, 4040-4056 }" in rules
    # The cluster's hosts (masters and workers, not the notebook host), loopback; link-local dropped.
    assert "elements = { 10.0.0.1, 10.0.0.2, 10.0.0.3, 127.0.0.0/8 }" in rules
    assert "elements = { ::1, fd00::1 }" in rules
    chain = rules.split("chain input {", 1)[1].split("}", 1)[0]
    statements = [line.strip() for line in chain.splitlines() if line.strip()]
    assert statements[0] == "type filter hook input priority filter; policy accept;"
    # The one drop: TCP to the UI ports, last (a bare drop would also take UDP answers, e.g. DNS).
    drops = [s for s in statements if "drop" in s]
    assert drops == ["tcp dport @ui_ports counter drop"] and statements[-1] == drops[0]
    assert "reject" not in chain


def test_a_hosts_container_bridges_are_not_allowed_and_rules_do_not_change_with_dockers_install():
    before = code(gateway().render("ui-firewall.nft.j2", "w1"))
    facts = dict(HOSTVARS["w2"]["ansible_facts"])
    facts.update({"interfaces": ["lo", "eth0", "docker0", "docker_gwbridge"],
                  "lo": {"ipv4": {"address": "127.0.0.1"}}, "eth0": {"ipv4": {"address": "10.0.0.3"}},
                  "docker0": {"ipv4": {"address": "172.17.0.1"}},
                  "docker_gwbridge": {"ipv4": {"address": "172.18.0.1"}},
                  "all_ipv4_addresses": ["127.0.0.1", "10.0.0.3", "172.17.0.1", "172.18.0.1"]})
    hostvars = {**HOSTVARS, "w2": {"ansible_facts": facts}}
    after = code(RoleRenderer("ui_gateway", CLUSTER, hostvars=hostvars, extra=TLS).render("ui-firewall.nft.j2", "w1"))
    assert "172.17.0.1" not in after and "172.18.0.1" not in after
    assert after == before


def test_extra_sources_are_allowed():
    rules = nft_rules(ui_gateway_allowed_sources=["192.168.5.0/24", "2001:db8::/64"])
    assert "192.168.5.0/24" in rules and "2001:db8::/64" in rules


def test_nft_accepts_the_rules(tmp_path):
    nft = debian_tool("nft", "nftables")
    path = tmp_path / "ui.nft"
    path.write_text(nft_rules(ui_gateway_allowed_sources=["192.168.5.0/24"]))
    result = subprocess.run([nft, "-c", "-f", str(path)], capture_output=True, text=True, check=False)
    if "Operation not permitted" in result.stderr:
        pytest.skip("nft -c needs CAP_NET_ADMIN here")
    assert result.returncode == 0, result.stderr


def test_the_index_links_livy_only_where_the_livy_role_puts_its_ui():
    groups = {**CLUSTER, "livy": ["m1"]}
    hostvars = {**HOSTVARS}
    with_livy = RoleRenderer("ui_gateway", groups, hostvars=hostvars, extra={**TLS, "livy_enabled": True})
    assert '<a href="/livy/ui/">Livy</a>' in with_livy.render("index.html.j2", "m1")
    for extra in ({}, {"livy_enabled": True, "livy_auth": "ldap"}, {"livy_enabled": True, "livy_ui_gateway_path": ""}):
        page = RoleRenderer("ui_gateway", groups, hostvars=hostvars, extra={**TLS, **extra}).render("index.html.j2", "m1")
        assert "Livy" not in page, extra


def test_the_gateway_reads_the_ui_ports_spark_listens_on():
    """One default for each: the gateway, which runs before Spark, proxies and closes the ports the
    spark role gives its UIs, with no copy of its own."""
    spark = RoleRenderer("spark", CLUSTER, hostvars=HOSTVARS)
    names = ["spark_master_webui_port", "spark_worker_webui_port", "spark_history_webui_port",
             "spark_history_server_enabled"]
    assert [gateway().value(n, "m1") for n in names] == [spark.value(n, "m1") for n in names]
    closed = gateway(spark_worker_webui_port=9091).value("ui_gateway_closed_ports", "m1")
    assert [str(p) for p in closed[:3]] == [str(spark.value(n, "m1")) for n in names[:1]] + ["9091"] + [
        str(spark.value("spark_history_webui_port", "m1"))]
