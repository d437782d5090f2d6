"""As a person would: a real browser (Debian's headless Chromium, driven by Selenium through
Debian's chromedriver) opens the hub's login page, signs in, and reaches JupyterLab; a
screenshot is kept as an artifact.

TLS is not switched off: Chromium accepts exactly the hub's key (--ignore-certificate-errors-
spki-list with the SHA-256 of the certificate's public key, which the test CA issued), so a
different certificate still fails. Exit 0 on success, 77 (with the reason on stdout) when
the browser cannot run here, 1 on a failure.

    browser_jupyterlab.py --base https://localhost:8443 --cert hub.crt --user alice --password pw --screenshot out.png
"""

import argparse
import pathlib
import sys
import time

from headless_chromium import SKIP, fail, start


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True)
    parser.add_argument("--cert", required=True, help="the hub's certificate (PEM)")
    parser.add_argument("--user", required=True)
    parser.add_argument("--password", required=True)
    parser.add_argument("--screenshot", required=True)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--chromedriver", default="/usr/bin/chromedriver")
    parser.add_argument("--timeout", type=int, default=120)
    args = parser.parse_args()

    driver, why_not = start(args.cert, args.chromium, args.chromedriver)
    if driver is None:
        print(f"SKIP: {why_not}")
        return SKIP
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    shot = pathlib.Path(args.screenshot)
    shot.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    try:
        wait = WebDriverWait(driver, args.timeout)
        driver.get(args.base.rstrip("/") + "/hub/login")
        wait.until(ec.presence_of_element_located((By.ID, "username_input")))
        driver.find_element(By.ID, "username_input").send_keys(args.user)
        driver.find_element(By.ID, "password_input").send_keys(args.password)
        driver.find_element(By.ID, "login_submit").click()
        wait.until(ec.url_contains(f"/user/{args.user}/lab"))
        # JupyterLab's shell, then its launcher or file browser: the application really rendered.
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, ".jp-LabShell")))
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, ".jp-Launcher, .jp-FileBrowser")))
        time.sleep(2)  # let the launcher's icons paint for the screenshot
        driver.save_screenshot(str(shot))
        print(f"OK: {args.user} reached JupyterLab at {driver.current_url} (title {driver.title!r}) "
              f"in {time.monotonic() - started:.1f}s; screenshot: {shot}")
        return 0
    except Exception as err:  # noqa: BLE001 - report what the browser showed
        return fail(driver, shot, err)
    finally:
        driver.quit()


if __name__ == "__main__":
    sys.exit(main())
