"""librdkafka's admin client (Python confluent-kafka) against a broker.

Run by broker/librdkafka_admin_test.go as: python3 librdkafka_admin.py
BOOTSTRAP. Creates a topic with a config, reads and changes its configs,
grows it and deletes records (transactions: librdkafka_transactions.py).
Prints one "ok <step>" line per step and exits 0, or prints the
failing step and exits 1.
"""

import sys
import time

from confluent_kafka import KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (AdminClient, AlterConfigOpType,
                                   ConfigEntry, ConfigResource, ConfigSource,
                                   NewPartitions, NewTopic, ResourceType)


def step(name, futures):
    for _, f in futures.items():
        f.result(timeout=30)
    print("ok", name, flush=True)


def main(bootstrap):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = "rdkafka-admin"

    step("create_topics", admin.create_topics(
        [NewTopic(topic, num_partitions=1, replication_factor=1, config={"retention.ms": "600000"})]))

    res = ConfigResource(ResourceType.TOPIC, topic)
    step("incremental_alter_configs", admin.incremental_alter_configs([ConfigResource(
        ResourceType.TOPIC, topic,
        incremental_configs=[ConfigEntry("segment.bytes", "1048576",
                                         incremental_operation=AlterConfigOpType.SET)])]))
    configs = admin.describe_configs([res])[res].result(timeout=30)
    seg, ret, pol = configs["segment.bytes"], configs["retention.ms"], configs["cleanup.policy"]
    if seg.value != "1048576" or seg.source != ConfigSource.DYNAMIC_TOPIC_CONFIG.value:
        raise SystemExit(f"segment.bytes: {seg.value} from {seg.source}")
    if ret.value != "600000" or pol.value != "delete" or pol.source != ConfigSource.DEFAULT_CONFIG.value:
        raise SystemExit(f"retention.ms {ret.value}, cleanup.policy {pol.value} from {pol.source}")
    print("ok describe_configs", flush=True)

    bad = admin.incremental_alter_configs([ConfigResource(
        ResourceType.TOPIC, topic,
        incremental_configs=[ConfigEntry("cleanup.policy", "shred",
                                         incremental_operation=AlterConfigOpType.SET)])])
    try:
        step("refused", bad)
        raise SystemExit("cleanup.policy=shred was accepted")
    except KafkaException as e:
        if "cleanup.policy" not in str(e):
            raise SystemExit(f"refusal does not name the key: {e}")
        print("ok cleanup.policy refused", flush=True)

    step("create_partitions", admin.create_partitions([NewPartitions(topic, 3)]))
    md = admin.list_topics(topic, timeout=30)
    if len(md.topics[topic].partitions) != 3:
        raise SystemExit(f"{len(md.topics[topic].partitions)} partitions after growing to 3")

    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(5):
        p.produce(topic, value=b"v%d" % i, partition=0)
    if p.flush(30) != 0:
        raise SystemExit("produce did not finish")
    deleted = admin.delete_records([TopicPartition(topic, 0, 3)])
    for _, f in deleted.items():
        low = f.result(timeout=30)
        if low.low_watermark != 3:
            raise SystemExit(f"low watermark {low.low_watermark}, want 3")
    print("ok delete_records", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
