"""librdkafka's transactions against Tributary (Python confluent-kafka).

Run by tests/compat/librdkafka_transactions_test.go as:
python3 librdkafka_transactions.py BOOTSTRAP. A transactional producer
commits and aborts in turn, and a read_committed consumer must read exactly
the committed records (a read_uncommitted one all of them); then a
consume-transform-produce loop copies a topic with
send_offsets_to_transaction, and the copy must hold each record once and
the group's offsets must stand where the copy ended. Prints one "ok <step>"
line per step and exits 0, or exits 1 naming the failing step.
"""

import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def read_all(bootstrap, topic, isolation, want, group):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "isolation.level": isolation, "enable.auto.commit": False})
    c.subscribe([topic])
    got, deadline, quiet = [], time.monotonic() + 60, None
    while True:
        m = c.poll(0.5)
        if m is not None:
            if m.error():
                raise SystemExit(f"consuming {topic}: {m.error()}")
            got.append(m.value().decode())
        now = time.monotonic()
        if len(got) >= want and quiet is None:
            quiet = now + 2  # what should not be there has time to show
        if quiet is not None and now > quiet:
            break
        if now > deadline:
            raise SystemExit(f"read {len(got)} of {want} records from {topic} at {isolation}")
    c.close()
    return got


def main(bootstrap):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(t, num_partitions=2, replication_factor=1)
                                  for t in ("rd-txn", "rd-in", "rd-out")]).values():
        f.result(timeout=30)

    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": "rd-txn-1"})
    p.init_transactions(30)
    committed = []
    for i in range(6):
        p.begin_transaction()
        commit = i % 2 == 0
        for j in range(50):
            v = f"{'commit' if commit else 'abort'}-{i}-{j}"
            p.produce("rd-txn", v.encode())
            if commit:
                committed.append(v)
        if commit:
            p.commit_transaction(30)
        else:
            p.flush(30)  # librdkafka drops what it has not sent when aborting
            p.abort_transaction(30)
    print("ok commit and abort", flush=True)
    got = read_all(bootstrap, "rd-txn", "read_committed", len(committed), "rd-committed")
    if sorted(got) != sorted(committed):
        extra = sorted(set(got) - set(committed))[:5]
        raise SystemExit(f"read_committed read {len(got)} records, want the {len(committed)} committed; extra {extra}")
    print("ok read_committed", flush=True)
    if len(read_all(bootstrap, "rd-txn", "read_uncommitted", 300, "rd-uncommitted")) != 300:
        raise SystemExit("read_uncommitted did not read all 300 records")
    print("ok read_uncommitted", flush=True)

    plain = Producer({"bootstrap.servers": bootstrap})
    for i in range(200):
        plain.produce("rd-in", f"in-{i}".encode())
    plain.flush(30)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "rd-copier", "enable.auto.commit": False,
                  "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
    c.subscribe(["rd-in"])
    tp = Producer({"bootstrap.servers": bootstrap, "transactional.id": "rd-copier-1"})
    tp.init_transactions(30)
    copied, deadline = 0, time.monotonic() + 90
    while copied < 200:
        if time.monotonic() > deadline:
            raise SystemExit(f"copied {copied} of 200")
        msgs = c.consume(50, 1.0)
        if not msgs:
            continue
        tp.begin_transaction()
        for m in msgs:
            if m.error():
                raise SystemExit(f"consuming rd-in: {m.error()}")
            tp.produce("rd-out", m.value())
        tp.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(), 30)
        tp.commit_transaction(30)
        copied += len(msgs)
    c.close()
    out = read_all(bootstrap, "rd-out", "read_committed", 200, "rd-check")
    if len(out) != 200 or len(set(out)) != 200:
        raise SystemExit(f"the copy holds {len(out)} records, {len(set(out))} distinct; want 200 once each")
    check = Consumer({"bootstrap.servers": bootstrap, "group.id": "rd-copier"})
    offs = check.committed([TopicPartition("rd-in", 0), TopicPartition("rd-in", 1)], timeout=30)
    if sum(o.offset for o in offs) != 200:
        raise SystemExit(f"the copier's committed offsets {offs} do not add up to 200")
    check.close()
    print("ok consume-transform-produce", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
