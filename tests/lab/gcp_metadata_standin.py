"""A stand-in for GCP's metadata server, as much of it as the spot watcher asks: the lab test's spot
notice (tests/lab/spot.yml) on a worker that is no preemptible VM.

Usage: python3 gcp_metadata_standin.py PORT FLAG_FILE
Serves GET /computeMetadata/v1/instance/preempted on 127.0.0.1:PORT: FALSE, or TRUE once FLAG_FILE
exists, with an ETag of the value; 403 without the `Metadata-Flavor: Google` header, as GCP's;
with ?wait_for_change=true&last_etag=E the answer waits until the value's ETag is no longer E (or
timeout_sec), as GCP's does.
"""

import http.server
import os
import sys
import time
import urllib.parse

PATH = "/computeMetadata/v1/instance/preempted"


def main():
    port, flag = int(sys.argv[1]), sys.argv[2]

    def value():
        preempted = os.path.exists(flag)
        return ("TRUE" if preempted else "FALSE"), ("etag-true" if preempted else "etag-false")

    class Metadata(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (the handler's API)
            url = urllib.parse.urlsplit(self.path)
            if url.path != PATH:
                self.send_error(404)
                return
            if self.headers.get("Metadata-Flavor") != "Google":
                self.send_error(403, "Missing Metadata-Flavor:Google header.")
                return
            query = urllib.parse.parse_qs(url.query)
            body, etag = value()
            if query.get("wait_for_change") == ["true"]:
                until = time.monotonic() + float(query.get("timeout_sec", ["300"])[0])
                while etag in query.get("last_etag", []) and time.monotonic() < until:
                    time.sleep(0.5)
                    body, etag = value()
            self.send_response(200)
            self.send_header("Content-Type", "application/text")
            self.send_header("ETag", etag)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args):
            pass

    http.server.ThreadingHTTPServer(("127.0.0.1", port), Metadata).serve_forever()


if __name__ == "__main__":
    main()
