"""Pinning apt signing keys by fingerprint (plugins/filter/openpgp.py), on real OpenPGP keys.

The fixtures are two throwaway ed25519 keys made with gpg for these tests (pinned.asc has an
encryption subkey as well; pinned.gpg is the same key unarmored). Where gpg is installed, fresh
keys are made at test time too and the filter's fingerprints compared with gpg's."""

import base64
import pathlib
import shutil
import subprocess

import pytest

from conftest import load_plugin

openpgp = load_plugin("filter", "openpgp")
FIXTURES = pathlib.Path(__file__).parent / "fixtures" / "openpgp"
PINNED = FIXTURES.joinpath("pinned.asc").read_text()
PINNED_BINARY = FIXTURES.joinpath("pinned.gpg").read_bytes()
OTHER = FIXTURES.joinpath("other.asc").read_text()
OTHER_BINARY = openpgp._dearmor(OTHER)  # pylint: disable=protected-access
PINNED_FPR = "DFE40E98A58499373AC25BE7F97F87765E20F546"
PINNED_SUBKEY_FPR = "C9D21CDA4E5323625F301107743398598D3A984A"
OTHER_FPR = "CD688334E4E5D210FA3A3B481486D9C0C0138FA2"
URL = "https://download.example.invalid/gpg"
VAR = "docker_repo_gpg_key_fingerprints"


def problems(content, pinned=(PINNED_FPR,)):
    return openpgp.openpgp_key_problems(content, list(pinned), URL, VAR)


def b64(data):
    return base64.b64encode(data if isinstance(data, bytes) else data.encode()).decode()


@pytest.mark.parametrize("content", [PINNED, PINNED_BINARY, b64(PINNED), b64(PINNED_BINARY)],
                         ids=["armored", "binary", "slurped armored", "slurped binary"])
def test_the_pinned_key_passes(content):
    assert openpgp.primary_fingerprints(content) == [PINNED_FPR]
    assert problems(content) == []


def test_the_pin_may_be_written_as_vendors_print_it():
    spaced = " ".join(PINNED_FPR[i:i + 4] for i in range(0, 40, 4)).lower()
    assert problems(b64(PINNED), [spaced]) == []


def test_subkeys_are_not_primary_keys():
    # The pinned key carries an encryption subkey; pinning the primary is enough, the subkey alone is not.
    assert problems(PINNED, [PINNED_SUBKEY_FPR])


def test_another_key_is_refused_with_the_message():
    found = problems(b64(OTHER))
    assert found == [
        f"The key file fetched from {URL} holds primary key(s) {OTHER_FPR}, not among {VAR} ({PINNED_FPR}); "
        f"found {OTHER_FPR}. Nothing was written. If the vendor rotated its key, compare the new fingerprint "
        f"with the one its install documentation publishes and set {VAR}."]


@pytest.mark.parametrize("content", [PINNED + OTHER, PINNED_BINARY + OTHER_BINARY],
                         ids=["two armored blocks", "one binary file"])
def test_a_file_with_a_second_key_that_is_not_pinned_is_refused(content):
    assert openpgp.primary_fingerprints(content) == [PINNED_FPR, OTHER_FPR]
    [message] = problems(content)
    assert f"holds primary key(s) {OTHER_FPR}, not among {VAR}" in message
    assert f"found {PINNED_FPR}, {OTHER_FPR}" in message
    # Both pinned: both pass (a vendor in the middle of a key rotation).
    assert problems(content, [PINNED_FPR, OTHER_FPR]) == []


@pytest.mark.parametrize("content", [
    "<html><body>404 Not Found</body></html>\n",
    b64(b"<html><body>404 Not Found</body></html>\n"),
    b64(b""),
    "",
    b64(bytes(range(256))),
    PINNED_BINARY[:-20],                                            # truncated
    PINNED.replace(PINNED.splitlines()[3], PINNED.splitlines()[3][::-1]),  # damaged: the armor's CRC fails
    PINNED.replace("PUBLIC KEY BLOCK", "PRIVATE KEY BLOCK"),
], ids=["html", "slurped html", "empty", "empty text", "random bytes", "truncated", "damaged armor", "not a public key block"])
def test_garbage_is_refused(content):
    [message] = problems(content)
    assert message.startswith(f"The file fetched from {URL} is not an OpenPGP public key file apt can trust: ")
    assert VAR in message and "Nothing was written" in message


def test_a_file_of_signatures_only_is_refused():
    # An old-format signature packet (tag 2) with a short body: not a key.
    [message] = problems(b64(bytes([0x88, 0x02, 0x04, 0x00])))
    assert "not a public key" in message


def test_an_empty_or_malformed_pin_is_refused_whatever_the_key():
    assert problems(PINNED, []) == [f"{VAR} is empty: pin the fingerprint(s) of the key at {URL} before apt may trust it."]
    [message] = problems(PINNED, ["0EBFCD88"])
    assert "0EBFCD88" in message and "40 hex digits" in message


GPG = shutil.which("gpg")


@pytest.mark.skipif(not GPG, reason="gpg is not installed")
def test_fingerprints_agree_with_gpg_on_fresh_keys(tmp_path):
    home = tmp_path / "gnupg"
    home.mkdir(mode=0o700)

    def gpg(*args, **kwargs):
        return subprocess.run([GPG, "--homedir", str(home), "--batch", "--quiet", "--pinentry-mode", "loopback",
                               "--passphrase", "", *args], check=True, capture_output=True, **kwargs).stdout

    for name, algo in (("a", "ed25519"), ("b", "rsa2048")):
        gpg("--quick-generate-key", f"sparkfleet {name} <{name}@example.invalid>", algo, "sign", "0")
    both = gpg("--armor", "--export").decode()
    listed = gpg("--show-keys", "--with-colons", input=both.encode()).decode().splitlines()
    # gpg's own answer: the fpr record right after each pub record.
    expected = [listed[i + 1].split(":")[9] for i, line in enumerate(listed) if line.startswith("pub:")]
    assert len(expected) == 2
    assert openpgp.primary_fingerprints(both) == expected
    assert problems(both, expected) == []
    [message] = problems(b64(both), expected[:1])
    assert f"holds primary key(s) {expected[1]}, not among {VAR}" in message
