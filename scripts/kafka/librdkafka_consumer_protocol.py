"""A librdkafka consumer with group.protocol=consumer (KIP-848).

Run by tests/compat/group_kip848_clients_test.go as: python3 librdkafka_consumer_protocol.py
BOOTSTRAP TOPIC GROUP COUNT. Consumes until it has COUNT records or 30 s
passed, committing synchronously after each record, then closes (leaving
the group) and prints "consumed N distinct D" and, if the client reported
one, the first error ("error <code name> <fatal> <message>"). It once
waited silently forever against a broker that did not serve the protocol.
"""

import sys
import time

from confluent_kafka import Consumer, KafkaException


def main(bootstrap, topic, group, count):
    errors = []
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "group.protocol": "consumer",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "error_cb": errors.append,
    })
    consumer.subscribe([topic])
    seen = []
    deadline = time.time() + 30
    while len(seen) < count and time.time() < deadline:
        try:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                errors.append(msg.error())
                continue
            seen.append(msg.value())
            consumer.commit(message=msg, asynchronous=False)
        except KafkaException as e:
            errors.append(e.args[0])
            if e.args[0].fatal():
                break
    consumer.close()
    print("consumed", len(seen), "distinct", len(set(seen)), flush=True)
    if errors:
        e = errors[0]
        print("error", e.name(), e.fatal(), e.str(), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
