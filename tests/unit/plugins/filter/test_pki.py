"""The cluster CA's name constraints: the default subtrees from the inventory, and which requested
names a CA's constraints leave out (checked before a certificate is signed)."""

import datetime
import ipaddress

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from conftest import load_plugin

pki = load_plugin("filter", "pki")


def ca(permitted=None):
    """A self-signed CA certificate (PEM), with these permitted subtrees when given."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test CA")])
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
               .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True))
    if permitted is not None:
        trees = [x509.DNSName(p[4:]) if p.startswith("DNS:") else x509.IPAddress(ipaddress.ip_network(p[3:]))
                 for p in permitted]
        builder = builder.add_extension(x509.NameConstraints(permitted_subtrees=trees, excluded_subtrees=None),
                                        critical=True)
    return builder.sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM).decode()


def test_the_default_covers_the_inventory_names_and_domains_and_leaves_addresses_free():
    names = ["sparkfleet-master", "sparkfleet-hub", "10.1.2.3", "hub.example.com", "DNS:localhost",
             "IP:203.0.113.7", "", None]
    fqdns = ["sparkfleet-master.c.proj.internal", "sparkfleet-hub.c.proj.internal", "host.com", "plain"]
    assert pki.pki_permitted_names(names, fqdns) == [
        "DNS:c.proj.internal", "DNS:hub.example.com", "DNS:localhost", "DNS:sparkfleet-hub", "DNS:sparkfleet-master"]


def test_a_name_under_a_permitted_domain_is_not_listed_twice():
    found = pki.pki_permitted_names(["a.b.example.org"], ["x.b.example.org"])
    assert found[:2] == ["DNS:b.example.org", "DNS:localhost"]


def test_a_malformed_ip_entry_is_refused():
    with pytest.raises(Exception, match="not an IP address"):
        pki.pki_names_outside(["IP:nope"], ca(["DNS:example.com"]))


@pytest.mark.parametrize("san, outside", [
    ("DNS:sparkfleet-master", False),
    ("DNS:w1.c.proj.internal", False),
    ("DNS:c.proj.internal", False),
    ("DNS:localhost", False),
    ("IP:172.18.0.5", False),
    ("IP:8.8.8.8", False),
    ("DNS:example.org", True),
    ("DNS:sparkfleet-master.evil.org", True),
    ("DNS:evilsparkfleet-master", True),
])
def test_names_outside_the_constraints_are_named(san, outside):
    cert = ca(pki.pki_permitted_names(["sparkfleet-master", "IP:203.0.113.7"], ["m.c.proj.internal"]))
    assert pki.pki_names_outside([san], cert) == ([san] if outside else [])


def test_a_ca_without_constraints_permits_every_name():
    assert pki.pki_names_outside(["DNS:example.org", "IP:8.8.8.8"], ca()) == []


def test_a_ca_that_constrains_only_dns_leaves_addresses_free():
    assert pki.pki_names_outside(["DNS:example.org", "IP:8.8.8.8"], ca(["DNS:example.com"])) == ["DNS:example.org"]


def test_ip_constraints_an_operator_set_are_checked_too():
    cert = ca(["DNS:example.com", "IP:10.0.0.0/8"])
    assert pki.pki_names_outside(["IP:10.1.2.3", "IP:8.8.8.8"], cert) == ["IP:8.8.8.8"]
