// Package mirror copies topics from live clusters into the analysis cluster,
// the paper's cross-datacenter mirror, exactly once and with no state of its
// own anywhere.
//
// What a caller may rely on:
//
//   - Exactly once. Every copy carries, in its OriginHeader, the hop
//     "NAME/PARTITION/OFFSET" it was copied from (origin.go). At start,
//     after a rebalance gives this process a partition, and after the target
//     refused a copy, the mirror reads each target partition's tail
//     backwards (tail.go) for the last copy of each source partition and
//     resumes right after it (resume.go). A mirror killed at any moment, any
//     number of times, leaves the target holding each source record once, in
//     source order per partition. No offsets are committed in the source; a
//     new target starts at the source's beginning (Config.Start), never where
//     another target's mirror stopped. Each source partition is copied in
//     transactions of its own transactional producer, which a new owner
//     initializes before it reads the tail (txn.go): that fences every
//     earlier owner, a dead process's late requests and a paused one's
//     alike, and aborts what it left open, and the tail is read at
//     read_committed. With Config.NoTransactions (a target without
//     transactions) those are windows again where what was in flight can
//     be copied twice.
//   - Any Kafka-protocol source, by its brokers (Source.Bootstrap) or, for a
//     Tributary cluster, its ZooKeeper. Mirror processes with the same
//     Config.Group share each source's partitions through the source's own
//     broker-side consumer group, used for assignment only (source.go);
//     Config.InstanceID makes a restarted process take its partitions back
//     at once.
//   - Order within a source partition is kept: one producer writes each
//     source partition's records in offset order.
//   - Placement: the topic named by Config.Rename (default the same name).
//     With the same partition count, the same partition number; otherwise
//     by key hash, where the Java client's default partitioner would put it
//     (producer.PartitionForKey), a keyless record by its source partition
//     modulo the target's count, unless Config.StrictPartitions makes a
//     mismatch an error. A missing target topic is created with the source's
//     partition count before its first record is copied.
//   - Key, value, timestamp and headers are kept; the origin header gains
//     a hop. A record that was in the target before (a hop names
//     Config.TargetName) is not copied: mirrors in opposite directions do
//     not loop.
//   - With a schema registry per datacenter (Source.Registry and
//     Config.TargetRegistry), every value that is a Confluent envelope has
//     its schema id rewritten to the target registry's id for the same
//     schema. Keys are never rewritten: their bytes decide the partition.
//   - A record that cannot be copied (an id the source registry does not
//     know, a record the target refuses as too large or invalid) stops its
//     partition only, reported in the status and the metric
//     tributary_mirror_partition_stopped; the others go on. With
//     Config.UnknownSchemas = CopyUnknown such an id is copied unchanged and
//     counted instead.
//
// Progress (lag and rate per source partition) is available from
// Mirror.Status, as JSON from Mirror.Handler, and as one log line per source
// every Config.LogInterval. What was copied is also reported record by
// record to an Auditor, once acknowledged, so the audit can count the
// analysis cluster as a tier; WindowCounter is a ready-made one.
package mirror
