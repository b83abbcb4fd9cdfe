"""Confluent's Python client round-trips an Avro record whose schema uses a
schema reference, through a Tributary broker and registry.

usage: avro_references.py REGISTRY_URL BOOTSTRAP TOPIC
Prints one line per check; exits non-zero on the first failure."""
import json
import sys

from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

url, bootstrap, topic = sys.argv[1:4]
client = SchemaRegistryClient({"url": url})

address = {"type": "record", "name": "Address", "namespace": "com.example",
           "fields": [{"name": "city", "type": "string"}, {"name": "zip", "type": ["null", "string"], "default": None}]}
address_id = client.register_schema("com.example.Address", Schema(json.dumps(address), "AVRO"))
version = client.get_latest_version("com.example.Address").version

person = {"type": "record", "name": "Person", "namespace": "com.example",
          "fields": [{"name": "name", "type": "string"}, {"name": "home", "type": "Address"},
                     {"name": "work", "type": ["null", "com.example.Address"], "default": None}]}
refs = [SchemaReference("com.example.Address", "com.example.Address", version)]
person_schema = Schema(json.dumps(person), "AVRO", refs)

ser = AvroSerializer(client, person_schema)
deser = AvroDeserializer(client)
record = {"name": "Ada", "home": {"city": "London", "zip": None}, "work": {"city": "Cambridge", "zip": "CB2"}}

p = Producer({"bootstrap.servers": bootstrap})
ctx = SerializationContext(topic, MessageField.VALUE)
p.produce(topic, value=ser(record, ctx))
if p.flush(30) != 0:
    sys.exit("produce did not complete")

c = Consumer({"bootstrap.servers": bootstrap, "group.id": "refs-" + topic, "auto.offset.reset": "earliest"})
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

# The registry shows the reference and who uses Address.
schema_id = int.from_bytes(msg.value()[1:5], "big")
fetched = client.get_schema(schema_id)
if [(r.name, r.subject, r.version) for r in fetched.references] != [("com.example.Address", "com.example.Address", version)]:
    sys.exit("schema %d came back with references %r" % (schema_id, fetched.references))
used_by = client.get_referenced_by("com.example.Address", version) if hasattr(client, "get_referenced_by") else None
print("schema", schema_id, "references Address", version, "; referenced by:", used_by)

# Address cannot be deleted while Person uses it (42206).
try:
    client.delete_subject("com.example.Address")
    sys.exit("deleting a referenced subject succeeded")
except Exception as e:  # SchemaRegistryError
    if getattr(e, "error_code", None) != 42206:
        sys.exit("deleting a referenced subject: %r, want error_code 42206" % e)
    print("delete refused:", e.error_code)
