"""Confluent's Python JSONSerializer and JSONDeserializer round-trip a
record through a Tributary broker and registry; the serializer validates
against the registered schema, and the registry refuses an incompatible
evolution with the reason.

usage: json_schema.py REGISTRY_URL BOOTSTRAP TOPIC"""
import json

from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.serialization import SerializationError

from serde import client, ctx, expect_equal, expect_error, fail, round_trip, topic

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
record = {"member": 7, "page": "/home", "tags": ["a", "b"]}
value = round_trip(ser(record, ctx), "json")

try:
    ser({"member": "seven", "page": "/home"}, ctx)
    fail("the serializer accepted a record its schema refuses")
except SerializationError as e:
    print("invalid record refused by the serializer:", str(e)[:80])

expect_equal(deser(value, ctx), record)

subject = topic + "-value"
registered = client.get_latest_version(subject)
if registered.schema.schema_type != "JSON":
    fail("schema type came back as %r" % registered.schema.schema_type)

# Adding an optional property to the closed model is compatible; making it
# required is not, and the registry says why.
evolved = dict(schema, properties=dict(schema["properties"], referrer={"type": "string"}))
if not client.test_compatibility(subject, Schema(json.dumps(evolved), "JSON")):
    fail("an optional property added to a closed model was found incompatible")
required = dict(evolved, required=["member", "page", "referrer"])
e = expect_error(409, client.register_schema, subject, Schema(json.dumps(required), "JSON"))
if "required property" not in e.error_message:
    fail("the refusal does not name the rule: %s" % e.error_message)
