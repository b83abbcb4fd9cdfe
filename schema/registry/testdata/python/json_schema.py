"""Confluent's Python JSONSerializer and JSONDeserializer round-trip a
record through a Tributary broker and registry; the serializer validates
against the registered schema, and the registry refuses an incompatible
evolution with the reason.

usage: json_schema.py REGISTRY_URL BOOTSTRAP TOPIC"""
import json
import sys

from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext, SerializationError

url, bootstrap, topic = sys.argv[1:4]
client = SchemaRegistryClient({"url": url})

schema = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "PageView",
    "type": "object",
    "properties": {
        "member": {"type": "integer"},
        "page": {"type": "string", "maxLength": 100},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["member", "page"],
    "additionalProperties": False,
}
ser = JSONSerializer(json.dumps(schema), client)
deser = JSONDeserializer(None, schema_registry_client=client)
ctx = SerializationContext(topic, MessageField.VALUE)
record = {"member": 7, "page": "/home", "tags": ["a", "b"]}

p = Producer({"bootstrap.servers": bootstrap})
p.produce(topic, value=ser(record, ctx))
if p.flush(30) != 0:
    sys.exit("produce did not complete")

try:
    ser({"member": "seven", "page": "/home"}, ctx)
    sys.exit("the serializer accepted a record its schema refuses")
except SerializationError as e:
    print("invalid record refused by the serializer:", str(e)[:80])

c = Consumer({"bootstrap.servers": bootstrap, "group.id": "json-" + topic, "auto.offset.reset": "earliest"})
c.subscribe([topic])
msg = None
for _ in range(60):
    msg = c.poll(1.0)
    if msg is not None and not msg.error():
        break
c.close()
if msg is None or msg.error():
    sys.exit("no record consumed: %r" % (msg and msg.error()))
got = deser(msg.value(), ctx)
if got != record:
    sys.exit("round trip changed the record: %r != %r" % (got, record))
print("round trip ok:", got)

subject = topic + "-value"
registered = client.get_latest_version(subject)
if registered.schema.schema_type != "JSON":
    sys.exit("schema type came back as %r" % registered.schema.schema_type)

# Adding an optional property to the closed model is compatible; making it
# required is not, and the registry says why.
evolved = dict(schema, properties=dict(schema["properties"], referrer={"type": "string"}))
if not client.test_compatibility(subject, Schema(json.dumps(evolved), "JSON")):
    sys.exit("an optional property added to a closed model was found incompatible")
required = dict(evolved, required=["member", "page", "referrer"])
try:
    client.register_schema(subject, Schema(json.dumps(required), "JSON"))
    sys.exit("a required property added was registered")
except SchemaRegistryError as e:
    if e.http_status_code != 409 or "required property" not in e.error_message:
        sys.exit("registering a new required property: %r" % e)
    print("incompatible, with the reason:", e.error_message[:140])
