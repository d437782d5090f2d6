"""Estimate pi on the cluster: sparkfleet's smoke test.

Usage: spark-submit sparkfleet_pi.py [PARTITIONS] [SAMPLES]
Prints one line `SPARKFLEET_RESULT {json}` with the estimate, the application id
and the number of executors that took part, for tools to parse.
"""

import json
import random
import sys

from pyspark.sql import SparkSession


def inside(_sample):
    x, y = random.random() * 2 - 1, random.random() * 2 - 1
    return 1 if x * x + y * y <= 1 else 0


def main():
    partitions = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    samples = int(sys.argv[2]) if len(sys.argv) > 2 else 2_000_000
    spark = SparkSession.builder.appName("sparkfleet-pi").getOrCreate()
    sc = spark.sparkContext
    hits = sc.parallelize(range(samples), partitions).map(inside).sum()
    executors = sc.parallelize(range(partitions), partitions).map(
        lambda _: __import__("socket").gethostname()).distinct().collect()
    result = {
        "pi": 4.0 * hits / samples,
        "samples": samples,
        "app_id": sc.applicationId,
        "executor_hosts": sorted(executors),
    }
    print("SPARKFLEET_RESULT " + json.dumps(result), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
