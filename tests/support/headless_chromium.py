"""Headless Chromium for the browser tests (Debian's chromium and chromedriver, through Selenium).

TLS is not switched off: Chromium accepts exactly one certificate's key
(--ignore-certificate-errors-spki-list with the SHA-256 of its public key), so a different
certificate still fails. When the browser cannot run here, start() gives the reason instead of a
driver; unavailable() turns that reason into the caller's exit: SKIP (77) on a workstation, but a
failure (1) where the environment variable CI is "true" (CI sets it), because CI installs Chromium
and selenium, so a browser test that did not run there has not passed.
"""

import base64
import hashlib
import os
import pathlib
import shutil
import subprocess
import sys

SKIP = 77
# make test installs Chromium in the background (scripts/molecule-lanes.sh), holding this lock from
# apt-get update to the end of the install (scripts/apt-get.sh --update-install).
APT_LOCK = "/var/lock/sparkfleet-apt.lock"


def wait_for_apt(seconds=600):
    """Wait (at most seconds) for an install of the project's apt-get in progress to end."""
    if shutil.which("flock") and pathlib.Path(APT_LOCK).exists():
        subprocess.run(["flock", "--wait", str(seconds), APT_LOCK, "true"], check=False)


def spki_hash(cert_path):
    """Base64 SHA-256 of the public key of the PEM certificate at cert_path."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    cert = x509.load_pem_x509_certificate(pathlib.Path(cert_path).read_bytes())
    der = cert.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return base64.b64encode(hashlib.sha256(der).digest()).decode()


def unavailable(why_not, environ=None):
    """(exit code, line to print) for a browser that cannot run here: SKIP, or a failure under CI."""
    if (os.environ if environ is None else environ).get("CI", "").strip().lower() == "true":
        return 1, f"FAIL: {why_not} (CI=true: a browser test that cannot run fails instead of skipping)"
    return SKIP, f"SKIP: {why_not}"


def start(cert_path, chromium="/usr/bin/chromium", chromedriver="/usr/bin/chromedriver"):
    """(driver, None), or (None, why the browser cannot run here). Without cert_path (a plain
    http:// server, for a local check) no certificate is pinned."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError as err:
        return None, f"selenium is not installed in {sys.executable}'s environment ({err})"
    wait_for_apt()
    for path in (chromium, chromedriver):
        if not shutil.which(path):
            return None, f"{path} is missing (apt-get install chromium chromium-driver)"
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    flags = ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1400,900"]
    if cert_path:
        flags.append(f"--ignore-certificate-errors-spki-list={spki_hash(cert_path)}")
    for flag in flags:
        options.add_argument(flag)
    try:
        return webdriver.Chrome(service=Service(chromedriver), options=options), None
    except Exception as err:  # noqa: BLE001 - any start-up failure means no browser here
        return None, f"Chromium did not start here: {str(err).splitlines()[0]}"


def fail(driver, shot, err):
    """Keep a screenshot of what the browser showed beside shot, say what failed; returns 1."""
    failure = shot.with_name(shot.stem + "-failure.png")
    driver.save_screenshot(str(failure))
    # Selenium's own message without the driver's native stack trace that str() appends.
    message = getattr(err, "msg", err) or "a wait ran out"
    print(f"FAIL: {type(err).__name__}: {message}; at {driver.current_url} (title {driver.title!r}); "
          f"screenshot {failure}")
    return 1
