"""Reading published checksum files (Apache's various formats)."""

import hashlib

import pytest
from ansible.errors import AnsibleFilterError

from conftest import load_plugin

artifacts = load_plugin("filter", "artifacts")
FILE = "spark-3.5.8-bin-hadoop3.tgz"
DIGEST = hashlib.sha512(b"spark").hexdigest()


def gpg_print_md(name, digest):
    groups = [digest[i:i + 8].upper() for i in range(0, len(digest), 8)]
    lines, line = [], f"{name}: "
    for i, group in enumerate(groups):
        line += group + " "
        if (i + 1) % 6 == 0:
            lines.append(line.rstrip())
            line = " " * (len(name) + 2)
    lines.append(line.rstrip())
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("content", [
    f"{DIGEST}  {FILE}\n",
    f"{DIGEST} *{FILE}\n",
    f"SHA512 ({FILE}) = {DIGEST}\n",
    gpg_print_md(FILE, DIGEST),
    f"{DIGEST.upper()}\n",
    f"{'0' * 128}  other-file.tgz\n{DIGEST}  {FILE}\n",
])
def test_every_published_format_gives_the_digest(content):
    assert artifacts.checksum_file_digest(content, FILE) == f"sha512:{DIGEST}"


def test_sha256_files():
    digest = hashlib.sha256(b"x").hexdigest()
    assert artifacts.checksum_file_digest(f"{digest}  a.whl\n", "a.whl", "sha256") == f"sha256:{digest}"


@pytest.mark.parametrize("content", [
    "",
    "<html>Not Found</html>",
    f"{DIGEST[:100]}  {FILE}\n",
    f"{DIGEST}  another-file.tgz\n",
])
def test_a_file_without_our_digest_is_an_error(content):
    with pytest.raises(AnsibleFilterError, match="no sha512 digest"):
        artifacts.checksum_file_digest(content, FILE)


def test_unknown_algorithm_is_refused():
    with pytest.raises(AnsibleFilterError, match="unsupported"):
        artifacts.checksum_file_digest(DIGEST, FILE, "md5")
