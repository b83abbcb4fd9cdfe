// Package mirror copies topics from live clusters into the analysis cluster,
// the paper's cross-datacenter mirror: for each source cluster an embedded
// consumer group (package consumer, coordinated in the source's ZooKeeper)
// decides which mirror process copies which partition, and one idempotent
// acks=all producer writes into the target.
//
// What a caller may rely on:
//
//   - Nothing is lost. A source offset is committed (to the group's offset
//     registry, consumers/<group>/offsets/<topic>/<partition> in the source's
//     ZooKeeper) only when every record below it was acknowledged by the
//     target with acks=all, or was deliberately not copied (see the loop rule
//     below). A mirror killed at any moment repeats, on restart, at most the
//     records copied since its last commit (Config.CommitInterval): it may
//     duplicate, never skip. A rebalance first waits a few seconds for the
//     target to acknowledge what was sent and commits that, so the
//     partition's next owner repeats only what was not acknowledged by then.
//   - Order within a source partition is kept: a source partition's records
//     are produced in offset order by one idempotent producer, so each
//     target partition receives them in that order.
//   - Placement: a record goes to the topic of the same name. When the
//     source and target topics have the same number of partitions it goes
//     to the same partition number. Otherwise it goes by key hash, exactly
//     where the Java client's default partitioner would put it
//     (producer.PartitionForKey), and a record without a key goes to its
//     source partition number modulo the target's partition count, so that
//     one source partition still lands in one target partition, in order.
//     This includes a target topic with fewer partitions than the source:
//     it is mirrored by key hash, with a warning per topic, unless
//     Config.StrictPartitions makes it an error.
//   - A topic missing in the target is created with the source's partition
//     count (and the target's default configuration) before its first record
//     is copied.
//   - Key, value, timestamp and headers are kept; the mirror adds the header
//     OriginHeader naming the source cluster, unless the record already has
//     one (it then keeps naming where the record was first produced). A
//     record whose origin is the target itself is not copied: two mirrors
//     running in opposite directions do not loop.
//   - With a schema registry per datacenter (Source.Registry and
//     Config.TargetRegistry), every value that is a Confluent envelope has
//     its schema id rewritten to the target registry's id for the same
//     schema, registered under the same subject (<topic>-value) if needed.
//     Keys are never rewritten, because their bytes decide the partition.
//     An id the source registry does not know stops the mirror with an
//     error naming source, topic, partition and offset (so does an id the
//     target registry refuses, e.g. as incompatible); with
//     Config.UnknownSchemas = CopyUnknown such a record is copied unchanged
//     and counted instead. A registry that cannot be reached is waited for,
//     like the target.
//   - Several mirror processes with the same Config.Group share each source's
//     partitions by the paper's rebalance, and take over the partitions of
//     one that died once its ZooKeeper session expires.
//
// Progress (lag and rate per source partition) is available from
// Mirror.Status, as JSON from Mirror.Handler, and as one log line per source
// every Config.LogInterval. What was copied is also reported record by
// record to an Auditor, once acknowledged, so the audit can count the
// analysis cluster as a tier; WindowCounter is a ready-made one.
package mirror
