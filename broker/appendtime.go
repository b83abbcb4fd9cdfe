package broker

// Produce's LogAppendTime stamping (produce.go), for topics with
// message.timestamp.type=LogAppendTime.

import "github.com/tributary-io/tributary/internal/recordbatch"

// stampLogAppendTime marks a RecordBatch v2 as timestamped by the broker
// with ts as its MaxTimestamp, which consumers then read as every record's
// timestamp (recordbatch.StampLogAppendTime: a damaged batch is left for
// the log's validation to refuse). The caller has checked that batch holds
// at least a whole header.
func stampLogAppendTime(batch []byte, ts int64) { recordbatch.StampLogAppendTime(batch, ts) }
