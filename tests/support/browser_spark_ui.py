"""As a person would: a real browser (Debian's headless Chromium, driven by Selenium through
Debian's chromedriver) opens the Spark master's UI through the UI gateway, with the gateway's
admin credential, and reads the worker list the page renders; a screenshot is kept.

TLS is not switched off: Chromium accepts exactly the gateway's key (--ignore-certificate-errors-
spki-list with the SHA-256 of the certificate's public key), so a different certificate still
fails. The credential is sent as the Authorization header of every request the page makes (the
DevTools protocol), read from a file, never from argv. Exit 0 on success, 77 (with the reason on
stdout) when the browser cannot run here (1 under CI=true, where it must run), 1 on a failure.

    browser_spark_ui.py --base https://10.0.0.5:8443/spark/ --cert gateway.crt --credentials cred \
        --workers sf-worker-1 sf-worker-2 --screenshot out.png
"""

import argparse
import base64
import pathlib
import sys
import time

from headless_chromium import fail, start, unavailable


def worker_rows(driver, by):
    """(worker id link text, href, row text) of each row of the page's worker table."""
    rows = []
    for row in driver.find_elements(by.CSS_SELECTOR, "table tbody tr"):
        links = row.find_elements(by.CSS_SELECTOR, "a[href*='/proxy/worker-']")
        if links:
            rows.append((links[0].text, links[0].get_attribute("href"), row.text))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True, help="the master's UI through the gateway")
    parser.add_argument("--cert", required=True, help="the gateway's certificate (PEM)")
    parser.add_argument("--credentials", required=True, help="file with user:password")
    parser.add_argument("--workers", nargs="+", required=True, help="hosts that must be listed ALIVE")
    parser.add_argument("--screenshot", required=True)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--chromedriver", default="/usr/bin/chromedriver")
    parser.add_argument("--timeout", type=int, default=90)
    args = parser.parse_args()

    driver, why_not = start(args.cert, args.chromium, args.chromedriver)
    if driver is None:
        code, line = unavailable(why_not)
        print(line)
        return code
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    credential = pathlib.Path(args.credentials).read_text(encoding="utf-8").strip()
    shot = pathlib.Path(args.screenshot)
    shot.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    try:
        driver.execute_cdp_cmd("Network.enable", {})
        driver.execute_cdp_cmd("Network.setExtraHTTPHeaders", {
            "headers": {"Authorization": "Basic " + base64.b64encode(credential.encode()).decode()}})
        driver.get(args.base)
        wanted = set(args.workers)

        def listed(drv):
            rows = worker_rows(drv, By)
            alive = {host for host in wanted for _text, _href, text in rows if host in text and "ALIVE" in text}
            return rows if alive == wanted else False

        rows = WebDriverWait(driver, args.timeout).until(listed)
        base_prefix = args.base.rstrip("/") + "/proxy/worker-"
        outside = [href for _text, href, _row in rows if not href.startswith(base_prefix)]
        driver.save_screenshot(str(shot))
        if outside:
            print(f"FAIL: worker links that do not go through the gateway: {outside}")
            return 1
        print(f"OK: the master UI at {driver.current_url} (title {driver.title!r}) lists "
              f"{len(rows)} workers ALIVE through the gateway ({', '.join(sorted(wanted))}), each linked under "
              f"{base_prefix}..., in {time.monotonic() - started:.1f}s; screenshot: {shot}")
        return 0
    except Exception as err:  # noqa: BLE001 - report what the browser showed
        return fail(driver, shot, err)
    finally:
        driver.quit()


if __name__ == "__main__":
    sys.exit(main())
