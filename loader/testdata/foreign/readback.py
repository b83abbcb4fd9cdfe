"""Reads what the loader wrote of a topic with a reader nobody here wrote,
and compares every record with its plain form (events.py) field by field:
the records are matched by id, and each must appear exactly once.

usage: readback.py avro|parquet|iceberg PATH EXPECTED.jsonl
PATH is the topic's directory (avro, parquet) or its table's (iceberg)."""
import datetime
import glob
import json
import os
import re
import sys

import events


def plain(v):
    if isinstance(v, datetime.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=datetime.timezone.utc)
        return (v - events.EPOCH) // datetime.timedelta(microseconds=1)
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, list):
        if v and all(isinstance(x, tuple) and len(x) == 2 for x in v):
            return {k: plain(x) for k, x in v}  # pyarrow's map
        return [plain(x) for x in v]
    return v


def avro_rows(path):
    import fastavro
    rows = []
    for name in sorted(glob.glob(os.path.join(path, "**", "*.avro"), recursive=True)):
        with open(name, "rb") as f:
            rows += list(fastavro.reader(f))
    return rows


def parquet_rows(path):
    # File by file: files written before a new schema version lack its
    # columns, and a dataset takes the columns of the first file it opens.
    import pyarrow.parquet as pq
    rows = []
    for name in sorted(glob.glob(os.path.join(path, "dt=*", "hr=*", "*.parquet"))):
        rows += pq.read_table(name).to_pylist()
    return rows


def iceberg_rows(path):
    from pyiceberg.table import StaticTable
    meta = os.path.join(path, "metadata")
    versions = [int(m.group(1)) for m in (re.match(r"v(\d+)\.metadata\.json$", f) for f in os.listdir(meta)) if m]
    tab = StaticTable.from_metadata("file://" + os.path.join(meta, "v%d.metadata.json" % max(versions)))
    return tab.scan().to_arrow().to_pylist()


def same(got, want):
    if isinstance(want, dict) and got == []:
        got = {}  # pyarrow reads an empty map as an empty list
    return got == want


kind, path, expected = sys.argv[1:4]
rows = {"avro": avro_rows, "parquet": parquet_rows, "iceberg": iceberg_rows}[kind](path)
want = {}
with open(expected) as f:
    for line in f:
        e = json.loads(line)
        want[e["id"]] = e
problems = []
seen = set()
for r in rows:
    r = plain(r)
    e = want.get(r.get("id"))
    if e is None:
        problems.append("a record no one produced: %r" % r)
        continue
    if r["id"] in seen:
        problems.append("%s read twice" % r["id"])
    seen.add(r["id"])
    for k, w in e.items():
        # A field added in version 2 is absent from version 1's Avro files.
        g = r.get(k)
        if not same(g, w):
            problems.append("%s.%s: read %r, want %r" % (r["id"], k, g, w))
missing = sorted(set(want) - seen)
if missing:
    problems.append("%d records missing, e.g. %s" % (len(missing), missing[:5]))
if problems:
    sys.exit("\n".join(problems[:30]))
print("%s: %d records, every field as produced" % (kind, len(seen)))
