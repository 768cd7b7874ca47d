"""A local Spark session with Iceberg's Spark runtime and the catalogs a test names."""

import os

from pyspark.sql import SparkSession


def start(app, catalogs):
    """Spark in local mode on two cores, the jars of SPARK_JARS, Iceberg's SQL extensions,
    and each of `catalogs` (name -> its settings, `type` among them) as an Iceberg
    SparkCatalog."""
    builder = (
        SparkSession.builder.master("local[2]")
        .appName(app)
        .config("spark.jars", os.environ["SPARK_JARS"])
        .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
    )
    for name, settings in catalogs.items():
        builder = builder.config(f"spark.sql.catalog.{name}", "org.apache.iceberg.spark.SparkCatalog")
        for key, value in settings.items():
            builder = builder.config(f"spark.sql.catalog.{name}.{key}", value)
    return builder.getOrCreate()
