"""Confluent's Python ProtobufSerializer and ProtobufDeserializer round-trip
a record through a Tributary broker and registry. The serializer registers
the schema as a base64 FileDescriptorProto; the deserializer fetches it
back with ?format=serialized.

usage: protobuf.py REGISTRY_URL BOOTSTRAP TOPIC"""
import sys

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

url, bootstrap, topic = sys.argv[1:4]
client = SchemaRegistryClient({"url": url})

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
ctx = SerializationContext(topic, MessageField.VALUE)
record = PageView(url="/home", member=7, tags=["a", "b"])

p = Producer({"bootstrap.servers": bootstrap})
p.produce(topic, value=ser(record, ctx))
if p.flush(30) != 0:
    sys.exit("produce did not complete")

c = Consumer({"bootstrap.servers": bootstrap, "group.id": "proto-" + topic, "auto.offset.reset": "earliest"})
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
print("round trip ok:", str(got).replace("\n", " "))
registered = client.get_latest_version(topic + "-value")
print("registered as", registered.schema.schema_type, "id", registered.schema_id)
if registered.schema.schema_type != "PROTOBUF":
    sys.exit("schema type came back as %r" % registered.schema.schema_type)
