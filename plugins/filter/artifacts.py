# -*- coding: utf-8 -*-
# Copyright: sparkfleet contributors
# Apache License 2.0
"""Artifact helpers for downloads that are fetched once and checksum-verified.

``checksum_file_digest(content, filename, algorithm='sha512')``
    The digest for ``filename`` in the text of a published checksum file, in any
    of the formats Apache projects have used:

    - ``<hex>  <file>`` or ``<hex> *<file>`` (sha512sum / shasum),
    - ``<file>: <HEX IN GROUPS ...>`` wrapped over several lines (gpg --print-md),
    - ``SHA512 (<file>) = <hex>`` (BSD / openssl dgst),
    - a bare ``<hex>``.

    Returns ``<algorithm>:<lowercase hex>``, ready for get_url's ``checksum``.
"""

from __future__ import annotations

import re

from ansible.errors import AnsibleFilterError

_LENGTHS = {"sha256": 64, "sha384": 96, "sha512": 128}


def checksum_file_digest(content, filename, algorithm="sha512"):
    algorithm = str(algorithm).lower()
    if algorithm not in _LENGTHS:
        raise AnsibleFilterError(f"unsupported checksum algorithm {algorithm!r}")
    want = _LENGTHS[algorithm]
    text = str(content or "")
    name = re.escape(str(filename))
    patterns = [
        rf"^\s*([0-9a-fA-F]{{{want}}})\s+\*?{name}\s*$",                       # sha512sum
        rf"^\s*{algorithm.upper()}\s*\(\s*{name}\s*\)\s*=\s*([0-9a-fA-F]{{{want}}})\s*$",  # BSD
    ]
    for pattern in patterns:
        match = re.search(pattern, text, re.MULTILINE)
        if match:
            return f"{algorithm}:{match.group(1).lower()}"
    # gpg --print-md: "file: AAAA BBBB\n      CCCC ..." up to the next "name:" or the end.
    match = re.search(rf"^\s*{name}\s*:\s*((?:[0-9a-fA-F]+\s*)+)", text, re.MULTILINE)
    if match:
        digest = re.sub(r"\s+", "", match.group(1))
        if len(digest) == want:
            return f"{algorithm}:{digest.lower()}"
    bare = re.sub(r"\s+", "", text)
    if re.fullmatch(rf"[0-9a-fA-F]{{{want}}}", bare):
        return f"{algorithm}:{bare.lower()}"
    raise AnsibleFilterError(
        f"no {algorithm} digest for {filename} in the checksum file (starts: {text[:80]!r})"
    )


class FilterModule:
    """Artifact filters."""

    def filters(self):
        return {"checksum_file_digest": checksum_file_digest}
