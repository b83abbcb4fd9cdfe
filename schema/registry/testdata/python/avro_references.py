"""Confluent's Python client round-trips an Avro record whose schema uses a
schema reference, through a Tributary broker and registry.

usage: avro_references.py REGISTRY_URL BOOTSTRAP TOPIC"""
import json

from confluent_kafka.schema_registry import Schema, SchemaReference
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer

from serde import client, ctx, expect_equal, expect_error, fail, round_trip, schema_id

address = {"type": "record", "name": "Address", "namespace": "com.example",
           "fields": [{"name": "city", "type": "string"}, {"name": "zip", "type": ["null", "string"], "default": None}]}
client.register_schema("com.example.Address", Schema(json.dumps(address), "AVRO"))
version = client.get_latest_version("com.example.Address").version

person = {"type": "record", "name": "Person", "namespace": "com.example",
          "fields": [{"name": "name", "type": "string"}, {"name": "home", "type": "Address"},
                     {"name": "work", "type": ["null", "com.example.Address"], "default": None}]}
refs = [SchemaReference("com.example.Address", "com.example.Address", version)]

ser = AvroSerializer(client, Schema(json.dumps(person), "AVRO", refs))
deser = AvroDeserializer(client)
record = {"name": "Ada", "home": {"city": "London", "zip": None}, "work": {"city": "Cambridge", "zip": "CB2"}}
value = round_trip(ser(record, ctx), "refs")
expect_equal(deser(value, ctx), record)

# The registry shows the reference and who uses Address.
fetched = client.get_schema(schema_id(value))
if [(r.name, r.subject, r.version) for r in fetched.references] != [("com.example.Address", "com.example.Address", version)]:
    fail("schema %d came back with references %r" % (schema_id(value), fetched.references))
print("schema", schema_id(value), "references Address", version)

# Address cannot be deleted while Person uses it (42206).
expect_error(42206, client.delete_subject, "com.example.Address")
