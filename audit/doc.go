// Package audit tells whether every event a producer sent reached every
// tier of the pipeline, per topic and ten-minute window of event time,
// as the 2011 Kafka paper's audit does.
//
// Everyone counts the same way: events per (topic, window of the event
// header's time, header server). Producers count what they sent, each
// tier counts what it holds, and every count travels as a monitoring event
// (Avro, schema MonitoringSchema) on the _audit topic. The reconciler
// reads them back and compares each tier with the producers.
//
// A tier is anything that counts, in one of two ways.
//
// Running counts, for code that sees events go by (producers, the mirror,
// the loader), go through a Publisher:
//
//	pub, err := audit.NewPublisher(audit.PublisherConfig{Client: cl, Registry: reg, Tier: audit.TierMirror})
//	pub.Count(topic, eventTime, server) // per event, once it is safely written
//	pub.NoTime(topic, recordTime)       // the event has no usable header time
//	pub.Malformed(topic, recordTime)    // the event does not decode
//	defer pub.Close(ctx)                // publishes the rest, marked final
//
// HeaderReader reads eventTime and server from an envelope (the mirror's
// AuditTier counts with it); a Producer wraps a kgo client, a
// schema.Serializer and a Publisher for applications. Every tier finds the
// header and its time by the one rule of schema.HeaderLayout (the
// top-level field "header", or the one HeaderField names, whatever the
// record's name), so the same event lands in the same window everywhere.
//
// Snapshots state what a cluster or a warehouse (Avro or Parquet hours)
// holds: Scan or ScanWarehouse, then PublishSnapshot (`tributary audit count`). A later
// snapshot of the same source replaces an earlier one, window by window,
// so counting again is always safe.
//
// What a caller may rely on:
//
//   - A monitoring event delivered twice is counted once (each carries a
//     unique id); one that is lost is reported as lost (each publisher
//     numbers its events 1, 2, 3, ..., and each event names the windows
//     of the 16 before it), and the counts it would have changed are
//     marked incomplete, not reported as missing data.
//   - A late event is counted in its own window: a publisher sends
//     further DELTA events for a window it already published.
//   - Events without a usable time and events that do not decode are
//     counted apart (no_time, malformed) by the window they were seen in,
//     never folded into a window of event time.
//   - Missing and excess are computed per header server, and
//     completeness never counts duplicates, so duplicates cannot hide a
//     loss. Where a tier was counted by a scan, which knows each event's
//     identity (Counts.Distinct), copies of one event are reported as
//     duplicates apart from excess events no producer counted.
//   - A topic is expected in the tiers that ever counted it
//     (Options.Expect overrides), so a topic no loader counts is not
//     reported missing from the warehouse.
//   - Counts that are part of a durable record (a load run's manifest)
//     are published with PublishOnce, under ids derived from the record:
//     publishing them again after a crash is a no-op.
//   - A Publisher with a WAL (OpenWAL) counts exactly what the brokers
//     hold across kills: counts are written before they count, monitoring
//     events before they are sent (resent under the same ids), and records
//     whose acknowledgement a killed process never wrote are looked for in
//     the brokers by the next one (Producer.Recover, Publisher.FindIn).
//   - A Publisher's Flush and Close return by their context's deadline,
//     whatever the brokers do; Unpublished says what was left.
//   - Windows inside the grace period are reported open and judged by no
//     threshold.
//
// Store holds what monitoring events say (Load and Follow fill it from
// the audit topic); Store.Report reconciles it into a Report, which
// package audit/report prints as a table, JSON, CSV or an HTML page. A
// store from NewRetainingStore (`audit serve`) forgets windows past its
// retention, so its memory is bounded however long it runs.
package audit
