"""What the serde scripts share: their arguments, a registry client, and a
round trip of one serialized value through a Tributary broker.

A script is run as SCRIPT REGISTRY_URL BOOTSTRAP TOPIC; it prints one line
per check and exits non-zero (fail) on the first failure."""
import sys

from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext

url, bootstrap, topic = sys.argv[1:4]
client = SchemaRegistryClient({"url": url})
ctx = SerializationContext(topic, MessageField.VALUE)


def fail(why):
    sys.exit(why)


def round_trip(value, group):
    """Produces value to the topic and returns the bytes consumed back."""
    p = Producer({"bootstrap.servers": bootstrap})
    p.produce(topic, value=value)
    if p.flush(30) != 0:
        fail("produce did not complete")
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group + "-" + topic, "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    msg = None
    for _ in range(60):
        msg = c.poll(1.0)
        if msg is not None and not msg.error():
            break
    c.close()
    if msg is None or msg.error():
        fail("no record consumed: %r" % (msg and msg.error()))
    return msg.value()


def expect_equal(got, want, what="round trip"):
    if got != want:
        fail("%s changed the record: %r != %r" % (what, got, want))
    print(what, "ok:", str(got).replace("\n", " "))


def schema_id(value):
    """The schema id in a value's Confluent envelope."""
    return int.from_bytes(value[1:5], "big")


def expect_error(code, fn, *args, **kwargs):
    """Calls fn, which must fail with the registry's error code."""
    try:
        fn(*args, **kwargs)
    except Exception as e:  # SchemaRegistryError
        if getattr(e, "error_code", None) != code:
            fail("%s: %r, want error_code %d" % (fn.__name__, e, code))
        print(fn.__name__, "refused:", code, str(getattr(e, "error_message", e))[:120])
        return e
    fail("%s succeeded, want error_code %d" % (fn.__name__, code))
