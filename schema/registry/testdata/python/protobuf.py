"""Confluent's Python ProtobufSerializer and ProtobufDeserializer round-trip
a record through a Tributary broker and registry. The serializer registers
the schema as a base64 FileDescriptorProto; the deserializer fetches it
back with ?format=serialized.

usage: protobuf.py REGISTRY_URL BOOTSTRAP TOPIC"""
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer

from serde import client, ctx, expect_equal, fail, round_trip, topic

# The message type, built at run time (no protoc needed).
F = descriptor_pb2.FieldDescriptorProto
fdp = descriptor_pb2.FileDescriptorProto(name="ex/page.proto", package="ex", syntax="proto3")
page = fdp.message_type.add(name="PageView")
page.field.add(name="url", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
page.field.add(name="member", number=2, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
page.field.add(name="tags", number=3, type=F.TYPE_STRING, label=F.LABEL_REPEATED)
pool = descriptor_pool.DescriptorPool()
pool.Add(fdp)
PageView = message_factory.GetMessageClass(pool.FindMessageTypeByName("ex.PageView"))

ser = ProtobufSerializer(PageView, client, {"use.deprecated.format": False})
deser = ProtobufDeserializer(PageView, {"use.deprecated.format": False}, schema_registry_client=client)
record = PageView(url="/home", member=7, tags=["a", "b"])
expect_equal(deser(round_trip(ser(record, ctx), "proto"), ctx), record)

registered = client.get_latest_version(topic + "-value")
print("registered as", registered.schema.schema_type, "id", registered.schema_id)
if registered.schema.schema_type != "PROTOBUF":
    fail("schema type came back as %r" % registered.schema.schema_type)
