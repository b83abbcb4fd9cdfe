// Package replication keeps the copies of a replicated partition in step:
// on the leader, its followers' progress, the ISR and the high watermark
// (leader.go, isr.go), and what Produce and Fetch ask of them (acks=all,
// fetch bounds: requests.go); on a follower, one fetcher per leader
// (fetcher.go, conn.go) that truncates to the leader's log by leader
// epoch (truncate.go), follows its log start (logstart.go), is throttled
// during reassignments (throttle.go) and fetches damaged batches back
// (repair.go); and, on every broker, the removal of copies no longer
// assigned to it (stray.go), the high-watermark checkpoint
// (checkpoint.go) and the log ends reported for offline partitions
// (logends.go). Request handlers see one partition through the facade
// Partition (partition.go, from Manager.Lookup), which hides whether it
// has one replica or several and whether its records are flushed.
//
// What a caller may rely on:
//   - An acks=all produce that WaitAcked lets through is fsynced on
//     every in-sync replica, and the ISR held at least min.insync.replicas
//     when the high watermark passed it.
//   - ReadBound never lets a consumer read past the high watermark of a
//     replicated partition, and the high watermark never goes back within
//     a leader epoch.
//   - A broker leads only in the broker epoch its partition's state names
//     it in: restarted, it serves nothing it led until elected again.
//   - A follower's log holds no record its leader's log does not, once the
//     fetcher has truncated it for the current leader epoch.
//   - Local data of a partition is deleted only when ZooKeeper itself
//     confirms the broker is no longer its replica, or its topic is gone.
//
// Manager is built by broker.New from Deps: the partition table
// (broker/partition), the cluster view, a few config values, a logger and
// two small funcs for what only the broker knows (a topic's
// min.insync.replicas, the dynamic throttle rates). Repair, made before
// the table, is the table's partition.Hooks. Nothing here imports the
// broker package or knows of client requests beyond the Fetch and
// OffsetForLeaderEpoch a follower sends.
package replication
