package replication

// The partition facade: what a request handler (Produce, Fetch,
// ListOffsets, DeleteRecords, OffsetForLeaderEpoch, the transaction
// coordinator's writes) asks of one partition this broker leads. A handler
// looks the partition up once and asks it to take an append, to wait
// for the acknowledgement acks=all promises, for the bound of a read and
// for its offsets; whether the partition has one replica or several, and
// whether its last records are flushed yet, is decided here, never in the
// handler:
//
//   - One replica: an append is acknowledged (acks=all) once fsynced, and
//     readers see up to the flushed end.
//   - Replicated: an append needs this broker to lead in the partition's
//     current leader and broker epochs (the batch then carries the leader
//     epoch), acks=all needs min.insync.replicas in the ISR before and the
//     high watermark past the batch after; consumers see up to the high
//     watermark, followers up to the log end, flushed or not.
//
// It lives in this package, not in broker/partition, because it is made
// of replication's leader state; the partition table below knows nothing
// of replication, and a package above both would only forward to this one.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/partition"
	"github.com/tributary-io/tributary/cluster"
)

// Partition is one partition this broker leads, as a request handler sees
// it. Get one from Manager.Lookup; it is valid for one request.
type Partition struct {
	rs *Manager
	t  cluster.Topic
	p  int32
	l  *log.Log
}

// Lookup returns t's partition p if this broker leads it (stores it, for a
// partition with one replica), opening its log, or the error code a client
// gets: UNKNOWN_TOPIC_OR_PARTITION for a partition t lacks or a topic
// deleted since the caller looked it up, NOT_LEADER_FOR_PARTITION when
// another broker leads it, KAFKA_STORAGE_ERROR (logged) when its log does
// not open.
func (rs *Manager) Lookup(t cluster.Topic, p int32) (Partition, int16) {
	if p < 0 || p >= t.Partitions() {
		return Partition{}, kerr.UnknownTopicOrPartition.Code
	}
	if t.Leaders[p] != rs.env.selfID {
		return Partition{}, kerr.NotLeaderForPartition.Code
	}
	l, err := rs.env.logs.Get(t, p)
	if errors.Is(err, partition.ErrTopicDeleted) {
		return Partition{}, kerr.UnknownTopicOrPartition.Code // looked up just before a delete
	}
	if err != nil {
		rs.env.logger.Error("partition unavailable", "topic", t.Name, "partition", p, "err", err)
		return Partition{}, kerr.KafkaStorageError.Code
	}
	return Partition{rs: rs, t: t, p: p, l: l}, 0
}

// Unopened reports whether t's partition p is one Lookup would open: this
// broker leads it and its log is not open yet.
func (rs *Manager) Unopened(t cluster.Topic, p int32) bool {
	return p >= 0 && p < t.Partitions() && t.Leaders[p] == rs.env.selfID && !rs.env.logs.IsOpen(t.Name, p)
}

// OpenTogether opens the logs of want several at a time
// (partition.Table.OpenTogether), for a request about to Lookup them all:
// one after the other, the Lookups of a produce naming thousands of
// partitions nothing had written yet created their logs in turn, an fsync
// each. Pass only partitions Unopened reported.
func (rs *Manager) OpenTogether(want []partition.Want) { rs.env.logs.OpenTogether(want) }

// Log is the partition's log in the storage engine, for what is not
// replication's concern: producer state, transactions, timestamps, its
// start offset.
func (pt *Partition) Log() *log.Log { return pt.l }

// Topic is the partition's topic as the caller looked it up.
func (pt *Partition) Topic() cluster.Topic { return pt.t }

// Writable is checked before a batch is appended with acks: this broker
// leads the partition (its leader epoch is then recorded, so the batch
// carries it) and, for acks=all (-1), the ISR holds min.insync.replicas,
// so that nothing is written that could not be acknowledged. 0 or the
// error code.
func (pt *Partition) Writable(acks int16) int16 {
	if code := pt.rs.leadForAppend(pt.t, pt.p, pt.l); code != 0 {
		return code
	}
	if acks == -1 {
		return pt.rs.enoughReplicas(pt.t, pt.p)
	}
	return 0
}

// AppendOptions are how Append writes a request's batches.
type AppendOptions struct {
	// Recompress stores the records in Codec (the topic's
	// compression.type), each re-encoded batch at most MaxBatchBytes.
	Recompress    bool
	Codec         log.Codec
	MaxBatchBytes int64
	Allow         *log.Allowance // the request's decompression allowance
	Guard         log.TxnGuard   // the transaction check, under the log's lock
}

// Append writes one request's batches as a unit (every batch is validated
// before any is written). On failure it returns the error and the code a
// client gets for it; a partition that cannot write is logged once, and
// once again when it writes. Call Writable first.
func (pt *Partition) Append(batches [][]byte, o AppendOptions) (log.AppendResult, int16, error) {
	var res log.AppendResult
	var err error
	if o.Recompress {
		res, err = pt.l.AppendBatchesInWithin(batches, o.Codec, o.MaxBatchBytes, o.Allow, o.Guard)
	} else {
		res, err = pt.l.AppendBatchesWithin(batches, o.Allow, o.Guard)
	}
	if err != nil {
		return res, pt.rs.env.logs.StorageError(pt.l, err), err
	}
	pt.rs.env.logs.StorageWritten(pt.l, 0)
	return res, 0, nil
}

// WaitAcked is acks=all for the batch ending at last: it returns once the
// batch is fsynced here and, replicated, under the high watermark (on the
// disk of every in-sync replica) with the ISR still at min.insync.replicas;
// otherwise the error and its code: NOT_LEADER_FOR_PARTITION,
// NOT_ENOUGH_REPLICAS_AFTER_APPEND, REQUEST_TIMED_OUT past ctx's
// deadline, a storage error's code (NOT_LEADER_FOR_PARTITION when ctx is
// cancelled: the broker is shutting down).
func (pt *Partition) WaitAcked(ctx context.Context, last int64) (int16, error) {
	err := pt.rs.WaitReplicated(ctx, pt.t, pt.p, pt.l, last)
	return pt.ackCode(err), err
}

// WhenAcked is WaitAcked for a partition of one replica, answered by the
// flush that covers the batch (log.WhenFlushed) instead of a goroutine
// waiting: done gets what WaitAcked would return, on the goroutine that
// decided it (the log's flush, most often), and must not block. A
// replicated partition, which also waits for its followers, must use
// WaitAcked: WhenAcked panics on one.
func (pt *Partition) WhenAcked(ctx context.Context, last int64, done func(code int16, err error)) {
	if pt.t.Replicated() {
		panic("replication: WhenAcked on a replicated partition")
	}
	pt.l.WhenFlushed(ctx, last, func(err error) { done(pt.ackCode(err), err) })
}

// ackCode is the error code of an acks=all wait's error (0 for none).
func (pt *Partition) ackCode(err error) int16 {
	if err == nil {
		return 0
	}
	if code, ok := errorCode(err); ok {
		return code
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return kerr.RequestTimedOut.Code
	}
	return pt.rs.env.logs.StorageError(pt.l, err)
}

// Bound is what a fetch may read of a partition: up to End (ToLogEnd: the
// log end, flushed or not, for a follower; below 0: the flushed end, for
// a partition with one replica; else an offset, the high watermark), and
// the high watermark to tell the client. Watch, if not nil, closes when
// the bound moves.
type Bound struct {
	HighWatermark, End int64
	Watch              <-chan struct{}
}

// ReadBound decides what a fetch by replica (-1: a consumer) at offset may
// read; a follower's fetch counts as its progress. 0 or the error code.
func (pt *Partition) ReadBound(replica int32, offset int64) (Bound, int16) {
	hw, end, watch, code := pt.rs.fetchBounds(pt.t, pt.p, pt.l, replica, offset)
	return Bound{HighWatermark: hw, End: end, Watch: watch}, code
}

// Read reads from offset, at most limit bytes (the first batch whole),
// up to end as ReadBound gave it. A read that found a damaged batch on a
// replicated partition this broker is stepping down from is not served
// (log.ErrClosed): a consumer must not commit past offsets a repair brings
// back.
func (pt *Partition) Read(offset, limit, end int64) (log.Slice, error) {
	var s log.Slice
	var err error
	switch {
	case end == ToLogEnd:
		s, err = pt.l.ReadToEnd(offset, limit)
	case end < 0:
		s, err = pt.l.Read(offset, limit)
	default:
		s, err = pt.l.ReadUpTo(offset, limit, end)
	}
	if err == nil && pt.t.Replicated() && pt.rs.refusingRead(pt.t.Name, pt.p) {
		s.Release() // the read found damage: not served with the gap (repair.go)
		return log.Slice{}, log.ErrClosed
	}
	return s, err
}

// SentToFollower counts n bytes a follower's fetch got against the leader
// replication throttle, if the partition is throttled.
func (pt *Partition) SentToFollower(replica int32, n int64) {
	pt.rs.sentToFollower(pt.t, pt.p, replica, n)
}

// HighWatermark is what consumers may read up to: the flushed end of a
// partition with one replica, the high watermark of a replicated one.
// 0 or the error code.
func (pt *Partition) HighWatermark() (int64, int16) {
	b, code := pt.ReadBound(-1, 0)
	return b.HighWatermark, code
}

// LastStable is the last stable offset under hw: the first offset of a
// transaction still open, or hw.
func (pt *Partition) LastStable(hw int64) int64 { return LastStable(pt.l, hw) }

// LastStable is l's last stable offset under hw.
func LastStable(l *log.Log, hw int64) int64 {
	if f := l.FirstUnstableOffset(); f >= 0 && f < hw {
		return f
	}
	return hw
}

// HighWatermarkPending reports whether hw, the high watermark of a
// replicated partition, may still lag what the previous leader
// acknowledged: a new leader learns its followers' ends only as they
// fetch. ListOffsets answers OFFSET_NOT_AVAILABLE meanwhile (KIP-207).
func (pt *Partition) HighWatermarkPending(hw int64) bool {
	return pt.rs.hwBehindEpochStart(pt.t, pt.p, pt.l, hw)
}

// LeaderEpoch is the epoch this broker leads the partition in, recorded
// in its log before it is answered for; -1 for a partition with one
// replica. 0 or the error code.
func (pt *Partition) LeaderEpoch() (int32, int16) {
	if !pt.t.Replicated() {
		return -1, 0
	}
	st, err := pt.rs.Lead(pt.t, pt.p, pt.l)
	if err != nil {
		code, _ := errorCode(err)
		return -1, code
	}
	return st.LeaderEpoch, 0
}
