"""A job that runs long enough to lose a worker in the middle: the lab's replacement test.

Usage: spark-submit slow_sum.py [PARTITIONS] [SECONDS_PER_PARTITION]
Sums i*i for i in range(PARTITIONS * 1000), each partition sleeping first, and prints one line
`SPARKFLEET_RESULT {json}` with the sum and the value it must have (computed without Spark).
"""

import json
import sys
import time

from pyspark.sql import SparkSession

ROWS_PER_PARTITION = 1000


def main():
    partitions = int(sys.argv[1]) if len(sys.argv) > 1 else 24
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 5.0
    rows = partitions * ROWS_PER_PARTITION
    spark = SparkSession.builder.appName("sparkfleet-slow-sum").getOrCreate()
    sc = spark.sparkContext

    def slow(part):
        time.sleep(seconds)
        return [sum(i * i for i in part)]

    total = sc.parallelize(range(rows), partitions).mapPartitions(slow).sum()
    expected = (rows - 1) * rows * (2 * rows - 1) // 6
    print("SPARKFLEET_RESULT " + json.dumps({"sum": total, "expected": expected, "app_id": sc.applicationId}), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
