"""A running application for the UI gateway's test: a driver that holds its UI open (no executors
needed) until a stop file appears or its time is up."""

import os
import sys
import time

from pyspark.sql import SparkSession

spark = SparkSession.builder.appName(sys.argv[1]).getOrCreate()
print("SPARKFLEET_APP", spark.sparkContext.applicationId, flush=True)
deadline = time.monotonic() + int(sys.argv[3])
while time.monotonic() < deadline and not os.path.exists(sys.argv[2]):
    time.sleep(2)
spark.stop()
