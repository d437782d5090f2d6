# -*- coding: utf-8 -*-
# Copyright: sparkfleet contributors
# Apache License 2.0
"""The cluster CA's name constraints (RFC 5280, 4.2.1.10).

``pki_permitted_names(names, domains=())``
    The permitted DNS subtrees a new cluster CA gets by default: each DNS name in ``names`` itself
    (inventory names, URLs' hosts, "DNS:" entries; addresses and "IP:" entries are left out), the
    DNS domain of each fully qualified name in ``domains`` (the hosts' gathered FQDNs: a host added
    later in the same domain is covered) when that domain has two labels or more, and
    ``localhost``. No IP subtrees: gRPC's TLS (BoringSSL, which Spark Connect's Python client
    uses) refuses every certificate of a CA that has them ("unsupported name constraint type"), so
    addresses stay unconstrained.

``pki_names_outside(sans, ca_certificate)``
    The entries of ``sans`` ("DNS:<name>", "IP:<address>") that the CA certificate's name
    constraints do not permit; [] when it has none (a CA made before them, or given by the operator).
"""

from __future__ import annotations

import ipaddress

try:
    from cryptography import x509
except ImportError:  # pragma: no cover - community.crypto needs it on the controller anyway
    x509 = None

from ansible.errors import AnsibleFilterError


def _address(text):
    try:
        return ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return None


def _entry(name):
    """("DNS", name) or ("IP", address) for one name, with or without its prefix; None for empty."""
    name = str(name or "").strip()
    if not name:
        return None
    kind, value = "", name
    for prefix in ("DNS", "IP"):
        if name.startswith(prefix + ":"):
            kind, value = prefix, name[len(prefix) + 1:]
    address = _address(value)
    if kind == "IP" or address is not None:
        if address is None:
            raise AnsibleFilterError(f"{name!r} is not an IP address")
        return ("IP", address)
    return ("DNS", value.rstrip(".").lower())


def pki_permitted_names(names, domains=None):
    """The default permitted DNS subtrees ("DNS:<name>") of a new cluster CA."""
    dns = {"localhost"}
    for name in list(names or []):
        entry = _entry(name)
        if entry and entry[0] == "DNS":
            dns.add(entry[1])
    for fqdn in list(domains or []):
        entry = _entry(fqdn)
        if entry and entry[0] == "DNS" and entry[1].count(".") >= 2:
            dns.add(entry[1].split(".", 1)[1])
    # A name under another permitted name adds nothing.
    return [f"DNS:{n}" for n in sorted(dns) if not any(n != d and n.endswith("." + d) for d in dns)]


def _within_dns(name, tree):
    tree = tree.lower()
    if tree.startswith("."):
        return name.endswith(tree)
    return name == tree or name.endswith("." + tree)


def _within(entry, subtrees):
    kind, value = entry
    for tree in subtrees:
        if kind == "DNS" and isinstance(tree, x509.DNSName) and _within_dns(value, tree.value):
            return True
        if kind == "IP" and isinstance(tree, x509.IPAddress) and value in ipaddress.ip_network(tree.value):
            return True
    return False


def pki_names_outside(sans, ca_certificate):
    """The entries of sans the CA's name constraints do not permit."""
    if x509 is None:
        raise AnsibleFilterError("pki_names_outside needs the Python cryptography library on the controller")
    cert = x509.load_pem_x509_certificate(str(ca_certificate).encode())
    try:
        constraints = cert.extensions.get_extension_for_class(x509.NameConstraints).value
    except x509.ExtensionNotFound:
        return []
    permitted = list(constraints.permitted_subtrees or [])
    excluded = list(constraints.excluded_subtrees or [])
    outside = []
    for san in list(sans or []):
        entry = _entry(san)
        if entry is None:
            continue
        kinds = {type(t) for t in permitted}
        kind_constrained = (x509.DNSName if entry[0] == "DNS" else x509.IPAddress) in kinds
        if (kind_constrained and not _within(entry, permitted)) or _within(entry, excluded):
            outside.append(san)
    return outside


class FilterModule:
    """sparkfleet PKI filters."""

    def filters(self):
        return {"pki_permitted_names": pki_permitted_names, "pki_names_outside": pki_names_outside}
