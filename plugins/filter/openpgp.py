# -*- coding: utf-8 -*-
# Copyright: sparkfleet contributors
# Apache License 2.0
"""Pinning the OpenPGP keys apt is told to trust.

``openpgp_key_problems(content, pinned, url, variable)``
    Sentences about a fetched key file whose primary keys are not all among the
    pinned fingerprints (or that holds no key, or is not an OpenPGP key file).
    An empty list means the file may be written where apt reads it.

Pure Python, so the check needs nothing on the host (gpg is not among every
host's packages) and gives the same answer everywhere. Only the primary keys
are compared: a subkey counts for apt only through the primary key's binding
signature, which apt's verifier checks.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re

_ARMOR = re.compile(
    r"-----BEGIN PGP PUBLIC KEY BLOCK-----\r?\n(.*?)-----END PGP PUBLIC KEY BLOCK-----", re.S)
_ARMOR_HEADER = re.compile(r"^[A-Za-z][A-Za-z0-9-]*: ")
_TAG_PUBLIC_KEY = 6
_TAG_SECRET_KEY = 5
_TAG_SECRET_SUBKEY = 7
_FINGERPRINT = re.compile(r"^[0-9A-F]{40}$")


class KeyFileError(ValueError):
    """The data is not an OpenPGP public key file this check understands."""


def _crc24(data):
    crc = 0xB704CE
    for byte in data:
        crc ^= byte << 16
        for _bit in range(8):
            crc <<= 1
            if crc & 0x1000000:
                crc ^= 0x1864CFB
    return crc & 0xFFFFFF


def _dearmor(text):
    blocks = _ARMOR.findall(text)
    if not blocks:
        raise KeyFileError("no '-----BEGIN PGP PUBLIC KEY BLOCK-----' armor")
    data = b""
    for block in blocks:
        body, checksum = [], None
        for line in block.splitlines():
            line = line.strip()
            if not line or _ARMOR_HEADER.match(line):
                continue
            # Base64 never starts with '=': this is the armor's CRC-24.
            if line.startswith("="):
                checksum = line[1:]
                continue
            body.append(line)
        try:
            raw = base64.b64decode("".join(body), validate=True)
        except (binascii.Error, ValueError) as error:
            raise KeyFileError(f"the armored block is not base64 ({error})") from None
        if checksum is not None:
            try:
                expected = int.from_bytes(base64.b64decode(checksum, validate=True), "big")
            except (binascii.Error, ValueError):
                raise KeyFileError("the armor's checksum line is not base64") from None
            if _crc24(raw) != expected:
                raise KeyFileError("the armor's checksum does not match its content (a damaged file)")
        data += raw
    return data


def _packets(data):
    """(tag, body) of each packet, RFC 9580 section 4.2 (both header formats)."""
    pos = 0
    while pos < len(data):
        first = data[pos]
        if not first & 0x80:
            raise KeyFileError(f"byte {pos} does not start an OpenPGP packet")
        if first & 0x40:  # new format
            tag = first & 0x3F
            if pos + 1 >= len(data):
                raise KeyFileError("a packet header is cut short")
            octet = data[pos + 1]
            if octet < 192:
                length, pos = octet, pos + 2
            elif octet < 224:
                if pos + 2 >= len(data):
                    raise KeyFileError("a packet header is cut short")
                length, pos = ((octet - 192) << 8) + data[pos + 2] + 192, pos + 3
            elif octet == 255:
                length, pos = int.from_bytes(data[pos + 2:pos + 6], "big"), pos + 6
            else:
                # Partial body lengths are for data packets, never in a key file.
                raise KeyFileError("a packet with a partial body length (not a key file)")
        else:  # old format
            tag, kind = (first >> 2) & 0x0F, first & 0x03
            if kind == 3:
                length, pos = len(data) - pos - 1, pos + 1
            else:
                size = 1 << kind
                length, pos = int.from_bytes(data[pos + 1:pos + 1 + size], "big"), pos + 1 + size
        if pos + length > len(data):
            raise KeyFileError("a packet runs past the end of the file (a truncated key)")
        yield tag, data[pos:pos + length]
        pos += length


def _as_bytes(content):
    """The file's bytes, from its text or from slurp's base64 of it."""
    if isinstance(content, (bytes, bytearray)):
        data = bytes(content)
    else:
        text = str(content or "")
        if "-----BEGIN PGP" in text:
            return _dearmor(text)
        try:
            data = base64.b64decode("".join(text.split()), validate=True)
        except (binascii.Error, ValueError):
            raise KeyFileError("neither an armored key nor base64 of a key file") from None
    if data.lstrip().startswith(b"-----BEGIN PGP"):
        try:
            return _dearmor(data.decode("ascii"))
        except UnicodeDecodeError:
            raise KeyFileError("the armored text is not ASCII") from None
    return data


def primary_fingerprints(content):
    """The fingerprints (40 upper-case hex digits) of the primary keys of a key file, in file order.

    content: the file's bytes, its armored text, or base64 of either (slurp's ``content``)."""
    data = _as_bytes(content)
    if not data:
        raise KeyFileError("the file is empty")
    found = []
    for index, (tag, body) in enumerate(_packets(data)):
        if tag in (_TAG_SECRET_KEY, _TAG_SECRET_SUBKEY):
            raise KeyFileError("it holds a secret key: apt needs the public key only")
        if index == 0 and tag != _TAG_PUBLIC_KEY:
            raise KeyFileError(f"it starts with an OpenPGP packet of type {tag}, not a public key")
        if tag != _TAG_PUBLIC_KEY:
            continue
        if not body or body[0] != 4:
            version = body[0] if body else "?"
            raise KeyFileError(f"a version {version} key: only version 4 keys (40-digit fingerprints) are understood")
        # A v4 fingerprint: SHA-1 of 0x99, the two-octet body length and the body.
        digest = hashlib.sha1(b"\x99" + len(body).to_bytes(2, "big") + body, usedforsecurity=False)
        found.append(digest.hexdigest().upper())
    return found


def normalize_fingerprint(value):
    """Upper-case hex without the spaces vendors print fingerprints with; None when it is not 40 hex digits."""
    text = re.sub(r"\s+", "", str(value)).upper()
    return text if _FINGERPRINT.match(text) else None


def openpgp_key_problems(content, pinned, url, variable):
    """Why the key file fetched from url must not be trusted under the pins of variable ([] when it may)."""
    wanted = [normalize_fingerprint(value) for value in pinned or []]
    if not wanted:
        return [f"{variable} is empty: pin the fingerprint(s) of the key at {url} before apt may trust it."]
    if None in wanted:
        bad = [value for value, norm in zip(pinned, wanted) if norm is None]
        return [f"{variable} holds {bad}: each item must be a full OpenPGP fingerprint, 40 hex digits."]
    try:
        found = primary_fingerprints(content)
    except KeyFileError as error:
        return [f"The file fetched from {url} is not an OpenPGP public key file apt can trust: {error}. "
                f"Nothing was written; check the URL (a mirror's error page?) and {variable}."]
    if not found:
        return [f"The file fetched from {url} holds no public key. Nothing was written."]
    unpinned = [fingerprint for fingerprint in found if fingerprint not in wanted]
    if unpinned:
        return [f"The key file fetched from {url} holds primary key(s) {', '.join(unpinned)}, not among "
                f"{variable} ({', '.join(wanted)}); found {', '.join(found)}. Nothing was written. If the vendor "
                f"rotated its key, compare the new fingerprint with the one its install documentation publishes "
                f"and set {variable}."]
    return []


class FilterModule:
    """sparkfleet OpenPGP filters."""

    def filters(self):
        return {"openpgp_key_problems": openpgp_key_problems}
