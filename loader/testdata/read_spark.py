"""Reads an Iceberg table the loader wrote with Apache Spark (pyspark and
Iceberg's Spark runtime), as an analyst would, through Spark's file-system
("hadoop") catalog on the warehouse, and prints JSON for
loader/iceberg_spark_test.go: the columns' Spark types, the count of
records per hour of event time (a GROUP BY in Spark SQL), the number of
snapshots and the current one's tributary.offsets, and every row in plain
JSON (bytes as hex, times in ISO 8601, decimals as their digits).

Usage: read_spark.py RUNTIME_JAR WAREHOUSE_URL NAMESPACE TABLE; WAREHOUSE_URL
may instead be rest:URI, an Iceberg REST catalog that Spark asks for the
table."""
import datetime
import decimal
import json
import sys

from pyspark.sql import SparkSession


def canon(v):
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).hex()
    if isinstance(v, datetime.datetime):
        # pyspark hands timestamps over in the process's time zone, which
        # the test sets to UTC (TZ=UTC).
        if v.tzinfo is None:
            v = v.replace(tzinfo=datetime.timezone.utc)
        return v.isoformat(timespec="microseconds")
    if isinstance(v, datetime.time):
        return v.isoformat(timespec="microseconds")
    if isinstance(v, datetime.date):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, dict):
        return {k: canon(x) for k, x in v.items()}
    if isinstance(v, list):
        return [canon(x) for x in v]
    return v


def main():
    jar, warehouse, ns, table = sys.argv[1:5]
    spark = (SparkSession.builder.master("local[2]").appName("tributary-test")
             .config("spark.jars", jar)
             .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
             .config("spark.sql.catalog.wh", "org.apache.iceberg.spark.SparkCatalog")
             .config("spark.sql.catalog.wh.type", "rest" if warehouse.startswith("rest:") else "hadoop")
             .config("spark.sql.catalog.wh.uri" if warehouse.startswith("rest:") else "spark.sql.catalog.wh.warehouse",
                     warehouse[len("rest:"):] if warehouse.startswith("rest:") else warehouse)
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.ui.enabled", "false")
             .config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.sql.shuffle.partitions", "2")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    name = "wh.%s.%s" % (ns, table)
    df = spark.table(name)
    hours = {r["h"]: r["n"] for r in spark.sql(
        "SELECT date_format(_event_time, 'yyyy-MM-dd-HH') AS h, count(*) AS n FROM %s GROUP BY 1" % name).collect()}
    snaps = spark.sql("SELECT summary FROM %s.snapshots ORDER BY committed_at" % name).collect()
    out = {
        "types": {f.name: f.dataType.simpleString() for f in df.schema.fields},
        "hours": hours,
        "snapshots": len(snaps),
        "offsets": snaps[-1]["summary"].get("tributary.offsets") if snaps else None,
        "rows": [canon(r.asDict(recursive=True)) for r in df.collect()],
    }
    json.dump(out, sys.stdout)
    spark.stop()


main()
