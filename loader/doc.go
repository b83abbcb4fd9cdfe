// Package loader runs one load: it copies events (Avro, and Protobuf and
// JSON Schema read as Avro) from Kafka topics into
// a warehouse (a local directory or HDFS) as Avro object container files,
// laid out for Hive and Spark:
//
//	<warehouse>/<topic>/YYYY/MM/DD/HH/<topic>.p<partition>.<first>-<last>.s<schema id>.avro
//	<warehouse>/<topic>/YYYY/MM/DD/HH/_SUCCESS         the hour is complete (JSON: what it certifies)
//	<warehouse>/<topic>/YYYY/MM/DD/HH/_INCOMPLETE      the audit found it short after the maximum wait (JSON: the figures)
//	<warehouse>/<topic>/YYYY/MM/DD/HH/_LATE-<run>      records run loaded into it after its _SUCCESS
//	<warehouse>/_errors/<topic>/YYYY/MM/DD/...jsonl   records that could not be decoded
//	<warehouse>/_tributary/                           the loader's own state
//
// With Config.Format FormatParquet the data files are Parquet instead,
// in Hive partitions, each topic's records decoded and resolved to its
// table schema (parquet.go, parquet_schema.go):
//
//	<warehouse>/<topic>/dt=YYYY-MM-DD/hr=HH/<topic>.p<partition>.<first>-<last>.s<schema id>.parquet
//
// With Config.Table the Parquet files go into Apache Iceberg tables
// instead, one per topic, and a run's commit is one snapshot per table
// whose summary holds the topic's offsets (iceberg.go):
//
//	<warehouse>/<Table>/<topic>/metadata/vN.metadata.json, snap-*.avro, *-m0.avro
//	<warehouse>/<Table>/<topic>/data/dt=YYYY-MM-DD/hr=HH/<topic>.p<partition>.<first>-<last>.s<schema id>.<run>.parquet
//
// Files are grouped by the hour of each event's header time (UTC), by
// writer schema (one schema per file, so evolution never mixes shapes in a
// file) and by partition; they roll by size and record count as well.
// Each record's Avro body goes into its file byte for byte as the
// producer wrote it: it is checked to be one whole value of its writer
// schema and its header time is read (schema.HeaderLayout), but it is
// never decoded and re-encoded. A Protobuf or JSON Schema record (as
// Confluent's serializers write them) is converted to the Avro encoding
// of its value under an Avro schema derived from its own
// (schema.Deserializer.AvroBody), and from there loaded as an Avro one;
// its files are kept apart by writer schema and, for Protobuf, message.
//
// What a caller may rely on:
//   - A run is either fully committed or invisible. Data files and the new
//     offsets are committed together by one exclusive create of a numbered
//     manifest (commit N+1, which only one of the runs that read commit N
//     can create; fence.go); files are moved into place only after it,
//     idempotently. The next run
//     (or any run holding the same topics) finishes the moves of a committed
//     run that was killed, and deletes the files of an uncommitted one. So a
//     run killed at any point, followed by another run, leaves every record
//     in the warehouse exactly once. With Config.Table the commit point is
//     the first table's new version (then the other tables', then the
//     manifest's rename); a run found in any of its tables is finished by
//     recovery, one found in none is discarded, and a table's next run
//     resumes from the offsets in its current snapshot.
//   - A run reads each partition from the offset committed in the warehouse
//     up to the high watermark seen when it began (or its record and time
//     limits), never further, so it ends even on a busy topic.
//   - Nothing is dropped silently. Records that cannot be decoded go to
//     _errors with their offsets and are counted; more than MaxErrors fail
//     the run. When records were deleted (by retention or DeleteRecords)
//     before they were loaded, the exact lost offset range of each
//     partition is in the Summary and the manifest, and the run continues
//     as OnDataLoss says.
//   - A record batch the brokers send damaged (CRC32C, lengths, counts)
//     fails the run with the topic, partition and batch offset; it is never
//     loaded in part. A partition's leader moving (or dying) mid-run is
//     followed: the run asks the brokers again until stallTimeout.
//   - One topic is loaded by one run at a time: a run holds a lease lock per
//     topic in the warehouse, which expires if the run's process dies. A
//     run paused past its lease (GC, SIGSTOP) never commits after another
//     run took the topic over: the commit itself refuses it
//     (CommitConflictError), without trusting clocks.
//   - With Config.Audit, a run's counts for the audit's warehouse tier are
//     committed in its manifest with the data and offsets they describe,
//     and are in the audit exactly once whatever the crash: a run that
//     fails before its commit counts nothing, and a committed run's counts
//     are published by it or, if it was cut short, by the next run with
//     Config.Audit, under event ids that make a second publish a no-op
//     (see AuditConfig).
//   - An hour's _SUCCESS certifies what Config.CompleteBy says: with the
//     audit (the default with Config.Audit), that the warehouse tier holds
//     every event the producers counted in the hour; records loaded into
//     an hour after it are recorded in _LATE-<run>, never silently.
//
// The state in _tributary:
//
//	_tributary/runs/<run>/                 a run's files before they are moved; its manifest
//	_tributary/commits/<seq>.json          committed manifests: the newest holding a topic
//	                                       has its offsets and hour progress; an empty one
//	                                       was pruned (its number is never used again);
//	                                       <seq>-<run>.json from older loaders still read
//	_tributary/locks/topic-<topic>/        the topic's lease lock
//	_tributary/audit/<run>                 the run's audit counts are published
package loader
