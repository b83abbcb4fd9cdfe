// Package jobs runs load jobs: spec files naming topics, a warehouse, a
// schedule and limits (see Spec), run once on request or on schedule by a
// daemon, with history kept in the warehouse.
//
// What a caller may rely on:
//   - A spec with a mistake is refused with a message naming the file, the
//     line and the field (an unknown field gets a "did you mean").
//   - One job never runs twice at once, even across daemons on different
//     machines: a run holds the job's lease lock in its warehouse, which
//     expires if the holder dies, so another daemon takes the job over.
//   - Every attempt that got as far as the warehouse is in the job's
//     history (start, end, records, bytes, offsets, lost ranges, outcome);
//     an attempt that could not reach the warehouse is kept in the local
//     state directory instead, and History shows both.
//   - A failed run is retried with exponential backoff, as the spec says.
package jobs
