"""A job that asks for GPUs: each task reports the host it ran on and the GPU addresses
Spark assigned to it (TaskContext.resources()). Prints one line: SPARKFLEET_GPU <json>."""

import json
import socket

from pyspark import TaskContext
from pyspark.sql import SparkSession


def where(_index):
    resources = TaskContext.get().resources()
    gpu = resources.get("gpu")
    return [{"host": socket.gethostname(), "gpu": list(gpu.addresses) if gpu else []}]


if __name__ == "__main__":
    spark = SparkSession.builder.appName("sparkfleet-gpu-tasks").getOrCreate()
    seen = spark.sparkContext.parallelize(range(8), 8).flatMap(where).collect()
    print("SPARKFLEET_GPU " + json.dumps(seen))
    spark.stop()
