"""Confluent's Python JSONSerializer and JSONDeserializer round-trip a
record whose schema "$ref"s another subject's schema through a schema
reference; the serializer validates through the reference, and the
registry checks an evolution with the reference resolved.

usage: json_references.py REGISTRY_URL BOOTSTRAP TOPIC"""
import json

from confluent_kafka.schema_registry import Schema, SchemaReference
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.serialization import SerializationError

from serde import client, ctx, expect_equal, expect_error, fail, round_trip, schema_id, topic

address = {"type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": "string"}},
           "required": ["city"], "additionalProperties": False}
client.register_schema("address.json", Schema(json.dumps(address), "JSON"))
version = client.get_latest_version("address.json").version

person = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Person", "type": "object",
          "properties": {"name": {"type": "string"}, "home": {"$ref": "address.json"}},
          "required": ["name", "home"]}
refs = [SchemaReference("address.json", "address.json", version)]
ser = JSONSerializer(Schema(json.dumps(person), "JSON", refs), client)
deser = JSONDeserializer(None, schema_registry_client=client)
record = {"name": "Ada", "home": {"city": "London", "zip": "N1"}}
value = round_trip(ser(record, ctx), "jsonrefs")
expect_equal(deser(value, ctx), record)

# The serializer validates through the reference: a zip of the wrong type
# inside home is refused.
try:
    ser({"name": "Ada", "home": {"city": "London", "zip": 1}}, ctx)
    fail("the serializer accepted a record the referenced schema refuses")
except SerializationError as e:
    print("invalid referenced part refused by the serializer:", str(e)[:80])

fetched = client.get_schema(schema_id(value))
if [(r.name, r.subject, r.version) for r in fetched.references] != [("address.json", "address.json", version)]:
    fail("schema %d came back with references %r" % (schema_id(value), fetched.references))
print("schema", schema_id(value), "references address.json", version)

# An Address whose zip became a number is registered where nothing checks
# it; Person over it is refused, the reason naming the referenced field.
client.set_compatibility("address.json", "NONE")
numeric = dict(address, properties={"city": {"type": "string"}, "zip": {"type": "integer"}})
client.register_schema("address.json", Schema(json.dumps(numeric), "JSON"))
v2 = client.lookup_schema("address.json", Schema(json.dumps(numeric), "JSON")).version  # latest is cached
subject = topic + "-value"
e = expect_error(409, client.register_schema, subject,
                 Schema(json.dumps(person), "JSON", [SchemaReference("address.json", "address.json", v2)]))
if "zip" not in e.error_message:
    fail("the refusal does not name the field: %s" % e.error_message)

expect_error(42206, client.delete_version, "address.json", version)
