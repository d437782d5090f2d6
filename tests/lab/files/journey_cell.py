from pyspark.sql import SparkSession, functions as F
spark = SparkSession.builder.getOrCreate()
df = spark.range(0, 1000000).withColumn("k", F.col("id") % 7)
rows = df.groupBy("k").agg(F.sum("id").alias("s")).orderBy("k").collect()
print("JOURNEY", spark.client._user_id, [(r["k"], r["s"]) for r in rows])
