# -*- coding: utf-8 -*-
# Copyright: sparkfleet contributors
# Apache License 2.0
"""The token that opens Spark's web UIs (Spark 4's ``org.apache.spark.ui.JWSFilter``).

``spark_ui_token(key, subject="sparkfleet")``
    A compact JWS signed with HMAC-SHA256 by ``key``, the cluster secret ``spark_ui_secret`` that
    the filter is given as ``secretKey``: a base64url string of at least 256 bits, as the filter
    decodes it. The filter checks only the signature, so the token is the same on every run (no
    time in it): readers' files change only when the key does.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re

from ansible.errors import AnsibleFilterError


def _b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def spark_ui_token(key, subject="sparkfleet"):
    """HS256 JWS over {"sub": subject}, keyed by the base64url-decoded key."""
    text = str(key or "")
    try:
        if not re.fullmatch(r"[A-Za-z0-9_-]*", text):
            raise ValueError("characters other than A-Z, a-z, 0-9, '-' and '_'")
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as error:
        raise AnsibleFilterError(f"spark_ui_secret is not base64url: {error}") from error
    if len(raw) < 32:
        raise AnsibleFilterError(
            f"spark_ui_secret decodes to {len(raw) * 8} bits: Spark's JWSFilter needs a base64url key of 256 bits "
            "or more (43 characters or more of A-Z, a-z, 0-9, '-' and '_')")
    signing_input = ".".join([
        _b64url(json.dumps({"alg": "HS256"}, separators=(",", ":")).encode()),
        _b64url(json.dumps({"sub": str(subject)}, separators=(",", ":")).encode()),
    ])
    signature = hmac.new(raw, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{_b64url(signature)}"


class FilterModule:
    """sparkfleet Spark UI filters."""

    def filters(self):
        return {"spark_ui_token": spark_ui_token}
