"""Confluent's Python client works in a context through a base URL ending
in /contexts/.ctx: the serializer registers there, the deserializer reads
the context's ids, and the same id means another schema in the default
context.

usage: contexts.py REGISTRY_URL BOOTSTRAP TOPIC"""
import json

from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer

from serde import client, ctx, expect_equal, fail, round_trip, schema_id, topic, url

blue = SchemaRegistryClient({"url": url + "/contexts/.blue"})

# The default context's first schema takes id 1 there.
other = json.dumps({"type": "record", "name": "Other", "fields": [{"name": "x", "type": "long"}]})
default_id = client.register_schema("other-value", Schema(other, "AVRO"))

page = json.dumps({"type": "record", "name": "Page", "fields": [{"name": "url", "type": "string"}]})
ser = AvroSerializer(blue, page)
deser = AvroDeserializer(blue)
record = {"url": "/home"}
value = round_trip(ser(record, ctx), "contexts")
expect_equal(deser(value, ctx), record)

if schema_id(value) != default_id:
    fail("ids are not per context: .blue's first schema got id %d, the default context's %d" % (schema_id(value), default_id))
if client.get_schema(default_id).schema_str != other:
    fail("id %d of the default context is not its own schema" % default_id)
print("id", default_id, "is Page in .blue and Other in the default context")

subjects = client.get_subjects()
if ":.blue:" + topic + "-value" not in subjects:
    fail("the context's subject is not listed qualified: %r" % subjects)
contexts = client._rest_client.get("contexts")
if contexts != [".", ".blue"]:
    fail("/contexts answered %r" % contexts)
print("contexts:", contexts)
