"""kafka-python (the pure-Python client) producing and consuming in a group.

Run by tests/compat/kafka_python_test.go as: python3 kafka_python_group.py
BOOTSTRAP TOPIC GROUP COUNT. It produces COUNT records (acks=all), then a
first consumer of GROUP reads from the start until it has at least half of
them, commits synchronously and closes (leaving the group); a second
consumer of the same group resumes from those commits and reads the rest,
commits and closes. The admin client then describes the group and reads
its committed offsets. It prints one line each:

  produced N
  first C
  second C
  distinct D duplicates U
  listed 1 group STATE protocol_type PT
  committed TOTAL

and exits 1 with the exception on any client error.
"""

import sys
import time

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition


def consume(bootstrap, topic, group, want, seen):
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        max_poll_records=50,
        session_timeout_ms=10000,
        heartbeat_interval_ms=500,
    )
    got = 0
    deadline = time.time() + 30
    while got < want and time.time() < deadline:
        batches = consumer.poll(timeout_ms=500)
        for records in batches.values():
            for r in records:
                seen.append(r.value.decode())
                got += 1
        if batches:
            consumer.commit()
    consumer.close()
    return got


def main(bootstrap, topic, group, count):
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    for i in range(count):
        producer.send(topic, value=("k%06d" % i).encode())
    producer.flush(timeout=30)
    producer.close()
    print("produced", count, flush=True)

    seen = []
    print("first", consume(bootstrap, topic, group, count // 2, seen), flush=True)
    print("second", consume(bootstrap, topic, group, count - len(seen), seen), flush=True)
    print("distinct", len(set(seen)), "duplicates", len(seen) - len(set(seen)), flush=True)

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    listed = [g for g in admin.list_groups() if g.get("group_id") == group]
    described = admin.describe_groups([group])[group]
    print("listed", len(listed), "group", described.get("group_state"), "protocol_type", described.get("protocol_type"), flush=True)
    offsets = admin.list_group_offsets(group)[group]
    print("committed", sum(o.offset for tp, o in offsets.items() if tp.topic == topic), flush=True)
    admin.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
