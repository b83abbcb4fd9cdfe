"""Confluent's Python ProtobufSerializer registers a message whose file
imports another: the imported file under its own subject, the message's
schema with a reference naming the import path. ProtobufDeserializer
resolves the reference back; the registry checks an evolution with the
import compiled, and keeps the imported file while it is used.

usage: protobuf_references.py REGISTRY_URL BOOTSTRAP TOPIC"""
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from confluent_kafka.schema_registry import Schema, SchemaReference
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer

from serde import client, ctx, expect_equal, expect_error, fail, round_trip, schema_id, topic

F = descriptor_pb2.FieldDescriptorProto
addr = descriptor_pb2.FileDescriptorProto(name="ex/address.proto", package="ex", syntax="proto3")
a = addr.message_type.add(name="Address")
a.field.add(name="city", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
a.field.add(name="zip", number=2, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
person = descriptor_pb2.FileDescriptorProto(name="ex/person.proto", package="ex", syntax="proto3",
                                            dependency=["ex/address.proto"])
p = person.message_type.add(name="Person")
p.field.add(name="name", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
p.field.add(name="home", number=2, type=F.TYPE_MESSAGE, type_name=".ex.Address", label=F.LABEL_OPTIONAL)
pool = descriptor_pool.DescriptorPool()
pool.Add(addr)
pool.Add(person)
Person = message_factory.GetMessageClass(pool.FindMessageTypeByName("ex.Person"))
Address = message_factory.GetMessageClass(pool.FindMessageTypeByName("ex.Address"))

ser = ProtobufSerializer(Person, client, {"use.deprecated.format": False})
deser = ProtobufDeserializer(Person, {"use.deprecated.format": False}, schema_registry_client=client)
record = Person(name="Ada", home=Address(city="London", zip="N1"))
value = round_trip(ser(record, ctx), "protorefs")
expect_equal(deser(value, ctx), record)

fetched = client.get_schema(schema_id(value))
refs = [(r.name, r.subject, r.version) for r in fetched.references]
if refs != [("ex/address.proto", "ex/address.proto", 1)]:
    fail("schema %d came back with references %r" % (schema_id(value), refs))
print("schema", schema_id(value), "references", refs)

# The same Person whose home became a string is refused, with the reason.
changed = (
    'syntax = "proto3";\npackage ex;\nimport "ex/address.proto";\n'
    'message Person { string name = 1; string home = 2; }\n'
)
e = expect_error(409, client.register_schema, topic + "-value",
                 Schema(changed, "PROTOBUF", [SchemaReference("ex/address.proto", "ex/address.proto", 1)]))
if "home" not in e.error_message:
    fail("the refusal does not name the field: %s" % e.error_message)

expect_error(42206, client.delete_subject, "ex/address.proto")
