"""Consumes a topic the mirror copied, in the analysis datacenter, with
Confluent's ProtobufDeserializer or JSONDeserializer against the target's
registry, and compares every record with its plain form (events.py). Each
value's schema id must be one the target registry has under the topic's
subject, and a Protobuf schema's reference to its header file must name
the target's version of it.

usage: consume.py REGISTRY_URL BOOTSTRAP TOPIC proto|json EXPECTED.jsonl"""
import json
import sys

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.json_schema import JSONDeserializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

import events

url, bootstrap, topic, fmt, expected = sys.argv[1:6]
client = SchemaRegistryClient({"url": url})
ctx = SerializationContext(topic, MessageField.VALUE)
if fmt == "proto":
    cls = events.proto_classes(2)
    deser = ProtobufDeserializer(cls, {"use.deprecated.format": False}, schema_registry_client=client)
else:
    deser = JSONDeserializer(None, schema_registry_client=client)


def proto_plain(o):
    pay = o.WhichOneof("pay")
    return {
        "header": {"time": o.header.time, "server": o.header.server},
        "id": o.id,
        "lines": [{"sku": ln.sku, "qty": ln.qty} for ln in o.lines],
        "attrs": dict(o.attrs),
        "card": o.card if pay == "card" else None,
        "voucher": o.voucher if pay == "voucher" else None,
        "state": events.STATES[o.state],
        "placed": o.placed.seconds * 1_000_000 + o.placed.nanos // 1000,
        "weight": o.weight if o.HasField("weight") else None,
        "coupon": o.coupon if o.HasField("coupon") else None,
        "ack": True if o.HasField("ack") else None,
    }


def json_plain(j):
    secs, frac = j["placed"].rstrip("Z").split(".")
    import datetime
    t = datetime.datetime.fromisoformat(secs).replace(tzinfo=datetime.timezone.utc)
    out = {k: j.get(k) for k in ("header", "id", "lines", "attrs", "card", "voucher", "state", "weight", "coupon")}
    out["header"] = {"time": j["header"]["time"], "server": j["header"].get("server")}
    out["placed"] = (t - events.EPOCH) // datetime.timedelta(microseconds=1) + int(frac[:6].ljust(6, "0"))
    return out


want = {}
with open(expected) as f:
    for line in f:
        e = json.loads(line)
        want[e["id"]] = e

c = Consumer({"bootstrap.servers": bootstrap, "group.id": "check-" + topic, "auto.offset.reset": "earliest",
              "enable.auto.commit": False})
parts = c.list_topics(topic, timeout=30).topics[topic].partitions
ends = {}
for p in parts:
    _, hi = c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
    ends[p] = hi
c.assign([TopicPartition(topic, p, 0) for p in parts])
problems, seen, ids = [], set(), set()
done = {p for p, hi in ends.items() if hi == 0}
polls = 0
while len(done) < len(ends) and polls < 600:
    polls += 1
    msg = c.poll(0.5)
    # A partition is read once the consumer's position reaches its end: a
    # topic the mirror writes in transactions ends with a commit marker,
    # which takes an offset but is never delivered.
    for tp in c.position([TopicPartition(topic, p) for p in ends if p not in done]):
        if tp.offset >= ends[tp.partition]:
            done.add(tp.partition)
    if msg is None:
        continue
    if msg.error():
        sys.exit("consume: %s" % msg.error())
    v = msg.value()
    ids.add(int.from_bytes(v[1:5], "big"))
    r = proto_plain(deser(v, ctx)) if fmt == "proto" else json_plain(deser(v, ctx))
    e = want.get(r["id"])
    if e is None:
        problems.append("a record no one produced: %r" % r)
        continue
    if r["id"] in seen:
        problems.append("%s read twice" % r["id"])
    seen.add(r["id"])
    for k, w in e.items():
        if r.get(k) != w:
            problems.append("%s.%s: read %r, want %r" % (r["id"], k, r.get(k), w))
c.close()
missing = sorted(set(want) - seen)
if missing:
    problems.append("%d records missing, e.g. %s" % (len(missing), missing[:5]))

subject = topic + "-value"
registered = {client.get_version(subject, v).schema_id for v in client.get_versions(subject)}
if not ids <= registered:
    problems.append("values carry schema ids %s; the target registry has %s under %s" % (sorted(ids), sorted(registered), subject))
for i in ids:
    s = client.get_schema(i)
    refs = [(r.name, r.subject) for r in (s.references or [])]
    if fmt == "proto" and refs != [("ex/header.proto", "ex/header.proto")]:
        problems.append("schema id %d on the target has references %r" % (i, refs))
if problems:
    sys.exit("\n".join(problems[:30]))
print("%s on the target: %d records as produced, schema ids %s of the target's registry" % (topic, len(seen), sorted(ids)))
