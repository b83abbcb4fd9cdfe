"""Reads an Iceberg table the loader wrote with pyiceberg, as another
engine would, and prints JSON for loader/iceberg_test.go: the current
snapshot's summary, the columns, the count of records per hour of event
time, the guid of every record, and whether pyiceberg's hour-partition
filter (a scan of one hour) finds exactly that hour's records.

Usage: read_iceberg.py TABLE_DIR [COLUMN...]; the named columns' values
are printed per record too (top-level, as text). TABLE_DIR may instead be
the s3:// URL of a version's metadata file: pyiceberg then reads the table
through its S3 file IO, from the store AWS_ENDPOINT_URL_S3 names with
AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, as the tests set them; or
rest:URI#NAMESPACE.TABLE, a table pyiceberg loads from the Iceberg REST
catalog at URI.

read_iceberg.py --files reads the Parquet files named on stdin (one a line)
with pyarrow instead, for tables whose paths pyiceberg cannot open here
(HDFS), and prints their guids and hours the same way."""
import json
import os
import re
import sys

import pyarrow.compute as pc
from pyiceberg.expressions import And, GreaterThanOrEqual, LessThan
from pyiceberg.table import StaticTable


def files():
    import pyarrow.parquet as pq
    guids, hours = [], {}
    for name in sys.stdin.read().split():
        t = pq.read_table(name)
        guids += [h["guid"].hex() for h in t.column("header").to_pylist()]
        for v in t.column("_event_time").to_pylist():
            h = v.strftime("%Y-%m-%d-%H")
            hours[h] = hours.get(h, 0) + 1
    json.dump({"guids": guids, "hours": hours}, sys.stdout)


def main():
    if sys.argv[1] == "--files":
        return files()
    table_dir = sys.argv[1]
    columns = sys.argv[2:]
    if table_dir.startswith("rest:"):
        from pyiceberg.catalog.rest import RestCatalog
        uri, ident = table_dir[len("rest:"):].rsplit("#", 1)
        tab = RestCatalog("rest", uri=uri).load_table(ident)
    elif table_dir.startswith("s3://"):
        tab = StaticTable.from_metadata(table_dir, {
            "s3.endpoint": os.environ["AWS_ENDPOINT_URL_S3"],
            "s3.access-key-id": os.environ["AWS_ACCESS_KEY_ID"],
            "s3.secret-access-key": os.environ["AWS_SECRET_ACCESS_KEY"],
            "s3.region": os.environ.get("AWS_REGION", "us-east-1"),
        })
    else:
        meta = os.path.join(table_dir, "metadata")
        versions = [int(m.group(1)) for m in (re.match(r"v(\d+)\.metadata\.json$", f) for f in os.listdir(meta)) if m]
        tab = StaticTable.from_metadata("file://" + os.path.join(meta, "v%d.metadata.json" % max(versions)))
    snap = tab.current_snapshot()
    rows = tab.scan().to_arrow()
    hours = {}
    for t in rows.column("_event_time").to_pylist():
        h = t.strftime("%Y-%m-%d-%H")
        hours[h] = hours.get(h, 0) + 1
    guids = [h["guid"].hex() for h in rows.column("header").to_pylist()]
    out = {
        "summary": dict(snap.summary.additional_properties, operation=snap.summary.operation.value) if snap else {},
        "snapshots": len(tab.metadata.snapshots),
        "columns": [f.name for f in tab.schema().fields],
        "refs": sorted(tab.metadata.refs.keys()),
        "hours": hours,
        "guids": guids,
        "files": sorted(t.file.file_path for t in tab.scan().plan_files()),
        "all_files": sorted({e.data_file.file_path for s in tab.metadata.snapshots for m in s.manifests(tab.io)
                             for e in m.fetch_manifest_entry(tab.io, discard_deleted=False)}),
        "values": {c: [None if v is None else str(v) for v in rows.column(c).to_pylist()] for c in columns},
    }
    if hours:
        # A scan filtered to one hour: pyiceberg prunes by the partition.
        first = min(rows.column("_event_time").to_pylist())
        start = first.replace(minute=0, second=0, microsecond=0)
        import datetime
        end = start + datetime.timedelta(hours=1)
        f = And(GreaterThanOrEqual("_event_time", start.isoformat()), LessThan("_event_time", end.isoformat()))
        scan = tab.scan(row_filter=f)
        out["hour_scan"] = {"hour": start.strftime("%Y-%m-%d-%H"), "records": scan.to_arrow().num_rows,
                            "files": len(list(scan.plan_files()))}
    json.dump(out, sys.stdout)


main()
