"""spark_ui_token: the HS256 token Spark 4's JWSFilter accepts for the cluster's UI key."""

import base64
import hashlib
import hmac
import json

import pytest
from ansible.errors import AnsibleFilterError

from conftest import load_plugin

spark_ui = load_plugin("filter", "spark_ui")

KEY = "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1eF3hJ5kL7nP9rS1uV3xY5zA7cD9fG1hJ3k"  # 64 characters, as the secrets role makes


def part(text):
    return json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


def test_the_token_is_a_jws_signed_with_the_decoded_key():
    token = spark_ui.spark_ui_token(KEY)
    header, payload, signature = token.split(".")
    assert part(header) == {"alg": "HS256"}
    assert part(payload) == {"sub": "sparkfleet"}
    key = base64.urlsafe_b64decode(KEY)
    expected = hmac.new(key, f"{header}.{payload}".encode(), hashlib.sha256).digest()
    assert base64.urlsafe_b64decode(signature + "=") == expected
    assert "=" not in token


def test_the_same_key_gives_the_same_token_and_another_key_another():
    assert spark_ui.spark_ui_token(KEY) == spark_ui.spark_ui_token(KEY)
    assert spark_ui.spark_ui_token(KEY) != spark_ui.spark_ui_token(KEY[::-1])
    assert part(spark_ui.spark_ui_token(KEY, "prometheus").split(".")[1]) == {"sub": "prometheus"}


@pytest.mark.parametrize("key, why", [
    ("shrt", "decodes to 24 bits"),
    ("short", "is not base64url"),
    ("a" * 42, "decodes to 248 bits"),
    ("not base64url!" * 4, "is not base64url"),
])
def test_a_key_the_filter_would_refuse_is_refused_here(key, why):
    with pytest.raises(AnsibleFilterError, match=why):
        spark_ui.spark_ui_token(key)
