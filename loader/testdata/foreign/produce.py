"""Produces events of events.py with Confluent's ProtobufSerializer or
JSONSerializer (registering the schema, and for Protobuf its referenced
header file, under TopicNameStrategy) and writes their plain forms, one
JSON object a line, to OUT. With BOOTSTRAP "-" the serialized values are
not produced but written to OUT.values, in hex, one a line, for a Go
producer to send (audit/foreign_e2e_test.go counts them as it does).

usage: produce.py REGISTRY_URL BOOTSTRAP TOPIC proto|json VERSION FIRST N BASE_MS OUT [STEP_MS]
(event i's header time is BASE_MS + i * STEP_MS; STEP_MS defaults to 1000)"""
import json
import sys

from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

import events

url, bootstrap, topic, fmt, version, first, n, base_ms, out = sys.argv[1:10]
version, first, n, base_ms = int(version), int(first), int(n), int(base_ms)
step = int(sys.argv[10]) if len(sys.argv) > 10 else 1000
client = SchemaRegistryClient({"url": url})
ctx = SerializationContext(topic, MessageField.VALUE)
if fmt == "proto":
    cls = events.proto_classes(version)
    ser = ProtobufSerializer(cls, client, {"use.deprecated.format": False})
else:
    ser = JSONSerializer(json.dumps(events.json_schema(version)), client)

dump = open(out + ".values", "a") if bootstrap == "-" else None
p = None if dump else Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
with open(out, "a") as f:
    for i in range(first, first + n):
        e = events.event(i, version, base_ms, step, proto=fmt == "proto")
        value = ser(events.to_proto(cls, e, i, base_ms, step) if fmt == "proto" else events.to_json(e, i, base_ms, step), ctx)
        if dump:
            dump.write(value.hex() + "\n")
        else:
            p.produce(topic, value=value)
        f.write(json.dumps(e) + "\n")
if dump:
    dump.close()
elif p.flush(60) != 0:
    sys.exit("produce did not complete")
print("produced", n, fmt, "v%d" % version, "events to", topic)
