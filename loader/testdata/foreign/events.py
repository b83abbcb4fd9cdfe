"""Protobuf and JSON Schema events for the end-to-end tests of the loader
(loader/foreign_test.go) and the mirror (mirror/foreign_test.go): the
message classes and JSON schemas, version 1 and version 2 (which adds an
optional field, "coupon"), event i of each, and the plain form every
reader must give back for it (times as epoch microseconds, maps as
objects, unset optional fields as null).

The Protobuf file imports its header from another file (a schema
reference) and the well-known Timestamp, and defines a helper message
before the event, so the event is message index [1]."""
import datetime

from google.protobuf import descriptor_pb2, descriptor_pool, empty_pb2, message_factory, timestamp_pb2

F = descriptor_pb2.FieldDescriptorProto
STATES = ["NEW", "PAID", "SHIPPED"]


def proto_classes(version):
    """The Order class of the schema's version (1 or 2)."""
    header = descriptor_pb2.FileDescriptorProto(name="ex/header.proto", package="ex", syntax="proto3")
    h = header.message_type.add(name="Header")
    h.field.add(name="time", number=1, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    h.field.add(name="server", number=2, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    ts = descriptor_pb2.FileDescriptorProto()
    timestamp_pb2.DESCRIPTOR.CopyToProto(ts)
    empty = descriptor_pb2.FileDescriptorProto()
    empty_pb2.DESCRIPTOR.CopyToProto(empty)
    order = descriptor_pb2.FileDescriptorProto(name="ex/order.proto", package="ex", syntax="proto3",
                                               dependency=["ex/header.proto", "google/protobuf/timestamp.proto",
                                                           "google/protobuf/empty.proto"])
    line = order.message_type.add(name="Line")
    line.field.add(name="sku", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    line.field.add(name="qty", number=2, type=F.TYPE_UINT32, label=F.LABEL_OPTIONAL)
    o = order.message_type.add(name="Order")
    o.field.add(name="header", number=1, type=F.TYPE_MESSAGE, type_name=".ex.Header", label=F.LABEL_OPTIONAL)
    o.field.add(name="id", number=2, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    o.field.add(name="lines", number=3, type=F.TYPE_MESSAGE, type_name=".ex.Line", label=F.LABEL_REPEATED)
    entry = o.nested_type.add(name="AttrsEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    o.field.add(name="attrs", number=4, type=F.TYPE_MESSAGE, type_name=".ex.Order.AttrsEntry", label=F.LABEL_REPEATED)
    o.oneof_decl.add(name="pay")
    o.field.add(name="card", number=5, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL, oneof_index=0)
    o.field.add(name="voucher", number=6, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL, oneof_index=0)
    state = o.enum_type.add(name="State")
    for n, s in enumerate(STATES):
        state.value.add(name=s, number=n)
    o.field.add(name="state", number=7, type=F.TYPE_ENUM, type_name=".ex.Order.State", label=F.LABEL_OPTIONAL)
    o.field.add(name="placed", number=8, type=F.TYPE_MESSAGE, type_name=".google.protobuf.Timestamp",
                label=F.LABEL_OPTIONAL)
    o.oneof_decl.add(name="_weight")
    o.field.add(name="weight", number=9, type=F.TYPE_DOUBLE, label=F.LABEL_OPTIONAL, oneof_index=1,
                proto3_optional=True)
    o.field.add(name="ack", number=11, type=F.TYPE_MESSAGE, type_name=".google.protobuf.Empty", label=F.LABEL_OPTIONAL)
    if version >= 2:
        o.oneof_decl.add(name="_coupon")
        o.field.add(name="coupon", number=10, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL, oneof_index=2,
                    proto3_optional=True)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(ts)
    pool.Add(empty)
    pool.Add(header)
    pool.Add(order)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("ex.Order"))


def json_schema(version):
    props = {
        "header": {"type": "object", "additionalProperties": False, "required": ["time"],
                   "properties": {"time": {"type": "integer"}, "server": {"type": "string"}}},
        "id": {"type": "string"},
        "lines": {"type": "array", "items": {
            "type": "object", "required": ["sku", "qty"],
            "properties": {"sku": {"type": "string"}, "qty": {"type": "integer", "minimum": 0}}}},
        "attrs": {"type": "object", "additionalProperties": {"type": "integer"}},
        "card": {"type": ["string", "null"]},
        "voucher": {"type": ["integer", "null"]},
        "state": {"type": "string", "enum": STATES},
        "placed": {"type": "string", "format": "date-time"},
        "weight": {"type": "number"},
    }
    if version >= 2:
        props["coupon"] = {"type": "string"}
    return {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Order", "type": "object",
            "additionalProperties": False, "required": ["header", "id", "state"], "properties": props}


EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def placed_ns(i, base_ms, step):
    """Event i's Timestamp in nanoseconds: below a microsecond too, which
    the tables truncate."""
    return (base_ms + i * step) * 1_000_000 + i * 1001


def event(i, version, base_ms, step=1000, proto=False):
    """Event i in its plain form: what every reader must give back. Its
    header time is base_ms + i * step. A Protobuf event has an "ack", a
    google.protobuf.Empty, which tables hold as true where it is set."""
    e = {
        "header": {"time": base_ms + i * step, "server": "web-%d" % (i % 3)},
        "id": "o-%d" % i,
        "lines": [{"sku": "s%d" % j, "qty": j + 1} for j in range(i % 3)],
        "attrs": {"a": i, "b": -i} if i % 2 else {},
        "card": "c%d" % i if i % 2 == 0 else None,
        "voucher": i if i % 2 else None,
        "state": STATES[i % 3],
        "placed": placed_ns(i, base_ms, step) // 1000,
        "weight": i * 0.5 if i % 4 else None,
        "coupon": "cp%d" % i if version >= 2 and i % 2 else None,
    }
    if proto:
        e["ack"] = True if i % 5 == 0 else None
    return e


def to_proto(cls, e, i, base_ms, step=1000):
    o = cls(id=e["id"], state=STATES.index(e["state"]))
    o.header.time, o.header.server = e["header"]["time"], e["header"]["server"]
    for ln in e["lines"]:
        o.lines.add(sku=ln["sku"], qty=ln["qty"])
    for k, v in e["attrs"].items():
        o.attrs[k] = v
    if e["card"] is not None:
        o.card = e["card"]
    if e["voucher"] is not None:
        o.voucher = e["voucher"]
    ns = placed_ns(i, base_ms, step)
    o.placed.seconds, o.placed.nanos = ns // 1_000_000_000, ns % 1_000_000_000
    if e["weight"] is not None:
        o.weight = e["weight"]
    if e["coupon"] is not None:
        o.coupon = e["coupon"]
    if e.get("ack"):
        o.ack.SetInParent()
    return o


def to_json(e, i, base_ms, step=1000):
    j = {k: v for k, v in e.items() if v is not None and k != "placed"}
    j["card"] = e["card"]  # null is a value of its type
    ns = placed_ns(i, base_ms, step)
    t = EPOCH + datetime.timedelta(microseconds=ns // 1000)
    j["placed"] = t.strftime("%Y-%m-%dT%H:%M:%S.") + "%09dZ" % (ns % 1_000_000_000)
    return j
