"""Reads a topic's Parquet files with pyarrow, as an analyst would, and
prints them as JSON for loader/parquet_test.go: the column types and every
row, partition columns (dt, hr) included. Values are made plain JSON:
bytes and UUIDs as hex, times in ISO 8601, decimals as their digits, maps
as objects."""
import datetime
import decimal
import json
import sys
import uuid

import pyarrow.dataset as ds


def canon(v):
    if isinstance(v, uuid.UUID):
        return v.hex
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).hex()
    if isinstance(v, (datetime.datetime, datetime.time)):
        return v.isoformat(timespec="microseconds")
    if isinstance(v, datetime.date):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, dict):
        return {k: canon(x) for k, x in v.items()}
    if isinstance(v, list):
        if v and all(isinstance(x, tuple) and len(x) == 2 for x in v):
            return {k: canon(x) for k, x in v}
        return [canon(x) for x in v]
    return v


d = ds.dataset(sys.argv[1], format="parquet", partitioning="hive")
t = d.to_table()
json.dump({
    "files": len(d.files),
    "types": {f.name: str(f.type) for f in t.schema},
    "rows": [canon(r) for r in t.to_pylist()],
}, sys.stdout)
