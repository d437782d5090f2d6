"""A job that runs long enough to lose a worker in the middle: the lab's replacement test, and the
rolling-change test (molecule/spark_cluster/rolling_change.yml).

Usage: spark-submit slow_sum.py [PARTITIONS] [SECONDS_PER_PARTITION] [STOP_FILE]
Sums i*i for i in range(PARTITIONS * 1000), each partition sleeping first, and prints one line
`SPARKFLEET_RESULT {json}` with the sum and the value it must have (computed without Spark).

With STOP_FILE (a path on the driver's host) the job lasts as long as the test needs and no
longer: the driver answers on a port of its own whether STOP_FILE exists, and a partition skips
its sleep once it does. Still one Spark job, and every partition is summed either way: give it
enough partitions to outlast what the test waits for, then create STOP_FILE.
"""

import http.server
import json
import os
import sys
import threading
import time
import urllib.request

from pyspark.sql import SparkSession

ROWS_PER_PARTITION = 1000


def serve_stop_flag(stop_file):
    """Answer GET / with b'stop' once stop_file exists (b'go' before); returns the port."""

    class Flag(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (the handler's API)
            body = b"stop" if os.path.exists(stop_file) else b"go"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("0.0.0.0", 0), Flag)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1]


def main():
    partitions = int(sys.argv[1]) if len(sys.argv) > 1 else 24
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 5.0
    stop_file = sys.argv[3] if len(sys.argv) > 3 else ""
    rows = partitions * ROWS_PER_PARTITION
    # A test running two of these tells them apart by name (tests/lab/autoscale.yml).
    spark = SparkSession.builder.appName(os.environ.get("SPARKFLEET_APP_NAME", "sparkfleet-slow-sum")).getOrCreate()
    sc = spark.sparkContext
    flag_url = ""
    if stop_file:
        flag_url = "http://%s:%d/" % (sc.getConf().get("spark.driver.host"), serve_stop_flag(stop_file))

    def stopped():
        if not flag_url:
            return False
        try:
            with urllib.request.urlopen(flag_url, timeout=5) as answer:
                return answer.read() == b"stop"
        except OSError:
            return False

    def slow(part):
        if not stopped():
            time.sleep(seconds)
        return [sum(i * i for i in part)]

    started = time.time()
    total = sc.parallelize(range(rows), partitions).mapPartitions(slow).sum()
    expected = (rows - 1) * rows * (2 * rows - 1) // 6
    result = {"sum": total, "expected": expected, "app_id": sc.applicationId, "seconds": round(time.time() - started, 1)}
    print("SPARKFLEET_RESULT " + json.dumps(result), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
