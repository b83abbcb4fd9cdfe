"""Reads a topic `tributary produce` wrote (audit/produce_foreign_test.go)
with Confluent's ProtobufDeserializer or JSONDeserializer and prints each
record as JSON, one a line, in offset order, for the test to compare
field by field. The Protobuf class is built here from a descriptor that
matches the test's shop.proto (Header, then Order with a nested Line, a
top-level State enum, a Timestamp and an optional weight), so the
deserializer must find shop.Order at the message indexes the records
carry. The JSON deserializer fetches the writer schema from the registry
by the record's id and validates the record against it.

usage: produced.py REGISTRY_URL BOOTSTRAP TOPIC proto|json COUNT"""
import json
import sys

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.json_schema import JSONDeserializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory, timestamp_pb2

F = descriptor_pb2.FieldDescriptorProto


def order_class():
    ts = descriptor_pb2.FileDescriptorProto()
    timestamp_pb2.DESCRIPTOR.CopyToProto(ts)
    f = descriptor_pb2.FileDescriptorProto(name="shop.proto", package="shop", syntax="proto3",
                                           dependency=["google/protobuf/timestamp.proto"])
    h = f.message_type.add(name="Header")
    h.field.add(name="time", number=1, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    h.field.add(name="server", number=2, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    h.field.add(name="service", number=3, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    h.field.add(name="guid", number=4, type=F.TYPE_BYTES, label=F.LABEL_OPTIONAL)
    o = f.message_type.add(name="Order")
    o.field.add(name="header", number=1, type=F.TYPE_MESSAGE, type_name=".shop.Header", label=F.LABEL_OPTIONAL)
    o.field.add(name="id", number=2, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    line = o.nested_type.add(name="Line")
    line.field.add(name="sku", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    line.field.add(name="qty", number=2, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL)
    o.field.add(name="lines", number=3, type=F.TYPE_MESSAGE, type_name=".shop.Order.Line", label=F.LABEL_REPEATED)
    o.field.add(name="state", number=4, type=F.TYPE_ENUM, type_name=".shop.State", label=F.LABEL_OPTIONAL)
    o.field.add(name="placed", number=5, type=F.TYPE_MESSAGE, type_name=".google.protobuf.Timestamp",
                label=F.LABEL_OPTIONAL)
    o.oneof_decl.add(name="_weight")
    o.field.add(name="weight", number=6, type=F.TYPE_DOUBLE, label=F.LABEL_OPTIONAL, oneof_index=0,
                proto3_optional=True)
    st = f.enum_type.add(name="State")
    st.value.add(name="NEW", number=0)
    st.value.add(name="PAID", number=1)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(ts)
    pool.Add(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order"))


url, bootstrap, topic, fmt, count = sys.argv[1:6]
client = SchemaRegistryClient({"url": url})
ctx = SerializationContext(topic, MessageField.VALUE)
if fmt == "proto":
    deser = ProtobufDeserializer(order_class(), {"use.deprecated.format": False}, schema_registry_client=client)
else:
    deser = JSONDeserializer(None, schema_registry_client=client)
c = Consumer({"bootstrap.servers": bootstrap, "group.id": "produced-" + topic, "auto.offset.reset": "earliest",
              "enable.auto.commit": False})
c.assign([TopicPartition(topic, 0, 0)])
n, polls = 0, 0
while n < int(count) and polls < 120:
    polls += 1
    msg = c.poll(0.5)
    if msg is None:
        continue
    if msg.error():
        sys.exit("consume: %s" % msg.error())
    v = deser(msg.value(), ctx)
    if fmt == "proto":
        v = json_format.MessageToDict(v, preserving_proto_field_name=True)
    print(json.dumps(v, sort_keys=True))
    n += 1
c.close()
if n < int(count):
    sys.exit("%s: %d records of %s read" % (topic, n, count))
