"""librdkafka consumers of both group protocols in one live group.

Run by tests/compat/group_migration_clients_test.go as: python3 librdkafka_migration.py
BOOTSTRAP TOPIC GROUP COUNT, with COUNT records already in TOPIC. A classic
consumer (group.protocol=classic, the range assignor: eager) reads a third
of them; a consumer-protocol one (group.protocol=consumer) joins, which
turns the group into a consumer group, and both read the second third; it
leaves, which turns the group classic again, and the classic one reads the
rest. Every record is committed synchronously once printed. It prints

  phase1 classic N
  phase2 classic N consumer M
  phase3 classic N
  consumed N distinct D
  error ...   (for each error a client reported)
"""

import sys
import time

from confluent_kafka import Consumer


def consumer(bootstrap, group, protocol, errors):
    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "group.protocol": protocol,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "error_cb": errors.append,
    }
    if protocol == "classic":
        conf.update({"partition.assignment.strategy": "range",
                     "session.timeout.ms": 10000, "heartbeat.interval.ms": 300})
    return Consumer(conf)


def poll_once(c, seen, counts, name, errors):
    msg = c.poll(0.1)
    if msg is None:
        return
    if msg.error():
        errors.append(msg.error())
        return
    seen.append(msg.value())
    counts[name] = counts.get(name, 0) + 1
    c.commit(message=msg, asynchronous=False)


def main(bootstrap, topic, group, count):
    errors, seen = [], []
    classic = consumer(bootstrap, group, "classic", errors)
    classic.subscribe([topic])
    counts = {}
    deadline = time.time() + 60
    while len(seen) < count // 3 and time.time() < deadline:
        poll_once(classic, seen, counts, "classic", errors)
    print("phase1 classic", counts.get("classic", 0), flush=True)

    modern = consumer(bootstrap, group, "consumer", errors)
    modern.subscribe([topic])
    counts = {}
    while (len(seen) < 2 * count // 3 or len(counts) < 2) and time.time() < deadline:
        poll_once(classic, seen, counts, "classic", errors)
        poll_once(modern, seen, counts, "consumer", errors)
    print("phase2 classic", counts.get("classic", 0), "consumer", counts.get("consumer", 0), flush=True)
    modern.close()

    counts = {}
    while len(seen) < count and time.time() < deadline:
        poll_once(classic, seen, counts, "classic", errors)
    print("phase3 classic", counts.get("classic", 0), flush=True)
    classic.close()
    print("consumed", len(seen), "distinct", len(set(seen)), flush=True)
    for e in errors:
        print("error", e, flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
