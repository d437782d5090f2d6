"""A job whose tasks try to become root on the workers that run them: sudo (setuid) as the
executor's user. Prints one line per task: SPARKFLEET_ESCALATE <host> <what sudo said>."""

import socket
import subprocess

from pyspark.sql import SparkSession


def attempt(_partition):
    run = subprocess.run(["sudo", "-n", "id", "-u"], capture_output=True, text=True, check=False)
    said = (run.stdout + run.stderr).strip().splitlines()
    yield socket.gethostname(), run.returncode, said[0] if said else ""


spark = SparkSession.builder.appName("sparkfleet-escalate").getOrCreate()
for host, code, said in spark.sparkContext.parallelize(range(2), 2).mapPartitions(attempt).collect():
    print(f"SPARKFLEET_ESCALATE {host} rc={code} {said}")
spark.stop()
