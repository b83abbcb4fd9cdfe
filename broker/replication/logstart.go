package replication

// A follower whose whole log lies below its leader's log start: while it
// was away the leader deleted (DeleteRecords, as Kafka Streams purges its
// repartition topics at every commit; or retention) every record it is
// missing and more, so the leader answers its fetch OFFSET_OUT_OF_RANGE.
// It then fetches from the leader's log start instead: the first batch
// lands past its log end with the jump recorded as the leader's gap
// (log.AppendReplica), and followLogStart moves its own start up to the
// leader's, as Kafka's follower truncates fully and starts at the
// leader's log start. Read as a log ahead of the leader's, the answer had
// kept such a follower out of the ISR for good.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/cluster"
)

// belowLeadersStart reports whether rp, an OFFSET_OUT_OF_RANGE answer,
// says the partition's log ends below the leader's log start, and if so
// makes the next fetch start there.
func (f *fetcher) belowLeadersStart(t cluster.Topic, rp kmsg.FetchResponseTopicPartition) bool {
	l, err := f.rs.env.logs.Get(t, rp.Partition)
	if err != nil || rp.LogStartOffset <= l.HighWatermark() {
		return false
	}
	key := partKey{t.Name, rp.Partition}
	if f.skipTo[key] != rp.LogStartOffset {
		f.rs.env.logger.Warn("follower's log ends below its leader's log start (the leader deleted the records in between): fetching from the leader's start",
			"topic", t.Name, "partition", rp.Partition, "leader", f.leader, "log_end_offset", l.HighWatermark(), "leader_log_start_offset", rp.LogStartOffset)
	}
	f.skipTo[key] = rp.LogStartOffset
	return true
}

// fetchOffset is where partition k is fetched from: its log end, or the
// leader's log start once the leader said the log end lies below it.
func (f *fetcher) fetchOffset(k partKey, l *log.Log) int64 {
	end := l.HighWatermark()
	if skip, ok := f.skipTo[k]; ok {
		if skip > end {
			return skip
		}
		delete(f.skipTo, k)
	}
	return end
}
