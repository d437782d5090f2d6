"""A DataFrame query with a shuffle, through Spark Connect, as a notebook would run it.

SparkSession.builder.getOrCreate() connects to SPARK_REMOTE (sc://...;use_ssl=true;token=...), as the
"PySpark (cluster)" kernel of the hub's notebooks does (tests/support/kernel_run.py).
With an argument, that URL is used instead, and the client makes a single attempt (the refused
cases: the stock client would retry an unavailable endpoint for about ten minutes). Prints one
JSON line; exits 3 when the query did not run.
"""
import json
import os
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.connect.client.retries import DefaultPolicy

# In a kernel, sys.argv is the kernel's own: only an sc:// argument is a URL.
given = [arg for arg in sys.argv[1:] if arg.startswith("sc://")]
refused_case = bool(given)
remote = given[0] if refused_case else os.environ["SPARK_REMOTE"]
try:
    spark = SparkSession.builder.remote(remote).getOrCreate()
    if refused_case:
        spark.client.set_retry_policies([DefaultPolicy(max_retries=0)])
    df = spark.range(0, 1000000).withColumn("k", F.col("id") % 7)
    rows = df.groupBy("k").agg(F.count("*").alias("n"), F.sum("id").alias("s")).orderBy("k").collect()
    print(json.dumps({"ok": True, "rows": [[r["k"], r["n"], r["s"]] for r in rows],
                      "version": spark.version, "user": spark.client._user_id}))
except Exception as exc:  # the refused cases: report what the client saw
    print(json.dumps({"ok": False, "error": f"{type(exc).__name__}: {exc}"[:2000]}))
    sys.exit(3)
