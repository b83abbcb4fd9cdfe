"""A librdkafka consumer with group.protocol=consumer (KIP-848) against a
broker that serves the classic protocol only.

Run by broker/refusals_test.go as: python3 librdkafka_consumer_protocol.py
BOOTSTRAP TOPIC. Polls for at most 20 s and prints the first error the
client reports ("error <code name> <fatal> <message>"), or "no error" if it
saw none: the failure this guards against is a consumer that waits
silently forever.
"""

import sys
import time

from confluent_kafka import Consumer, KafkaException


def main(bootstrap, topic):
    errors = []
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": "kip848-app",
        "group.protocol": "consumer",
        "error_cb": errors.append,
    })
    consumer.subscribe([topic])
    deadline = time.time() + 20
    while not errors and time.time() < deadline:
        try:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error():
                errors.append(msg.error())
        except KafkaException as e:
            errors.append(e.args[0])
    if not errors:
        print("no error", flush=True)
        return
    e = errors[0]
    print("error", e.name(), e.fatal(), e.str(), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
