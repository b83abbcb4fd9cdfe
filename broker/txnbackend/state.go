package txnbackend

// The coordinator's state partitions: __transaction_state, created on
// first use, read whole when the coordinator loads a partition and
// appended to (acks=all) in the leader epoch it was read in.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/group"
	"github.com/tributary-io/tributary/broker/internaltopic"
	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/txn"
	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/recordbatch"
)

// statePartition is the log of a state partition this broker leads,
// creating the topic on first use.
func (tb *Backend) statePartition(ctx context.Context, p int32) (cluster.Topic, *log.Log, error) {
	t, ok := tb.cfg.Meta.Topic(txn.StateTopic)
	if !ok {
		var err error
		t, err = tb.cfg.CreateTopic(ctx, txn.StateTopic, tb.cfg.Partitions, tb.cfg.ReplicationFactor,
			maps.Clone(internaltopic.Required(txn.StateTopic)))
		if errors.Is(err, cluster.ErrTopicExists) {
			t, ok = tb.cfg.Meta.Topic(txn.StateTopic)
			if !ok {
				return t, nil, errors.New("the transaction state topic exists but is not in this broker's view yet")
			}
		} else if err != nil {
			return t, nil, fmt.Errorf("creating %s: %w", txn.StateTopic, err)
		} else {
			tb.cfg.Logger.Info("created the transaction state topic", "topic", txn.StateTopic, "partitions", t.Partitions())
		}
	}
	part, code := tb.cfg.Replicas.Lookup(t, p)
	if code == 0 {
		code = part.Writable(1)
	}
	if code != 0 {
		return t, nil, kerr.ErrorForCode(code)
	}
	return t, part.Log(), nil
}

// AppendState writes recs to state partition p if this broker leads it in
// epoch, and returns once they are replicated (txn.Backend).
func (tb *Backend) AppendState(ctx context.Context, p int32, epoch int32, recs []txn.Record) error {
	t, l, err := tb.statePartition(ctx, p)
	if err != nil {
		return err
	}
	if st, err := tb.cfg.Replicas.Lead(t, p, l); err != nil {
		return err
	} else if st.LeaderEpoch != epoch {
		return fmt.Errorf("%w: state read in leader epoch %d, this broker leads it in epoch %d", kerr.NotCoordinator, epoch, st.LeaderEpoch)
	}
	res, err := l.Append(stateBatch(recs, time.Now().UnixMilli()))
	if err != nil {
		return err
	}
	return tb.cfg.Replicas.WaitReplicated(ctx, t, p, l, res.LastOffset)
}

// ReadState returns every record of state partition p up to its high
// watermark, oldest first (txn.Backend).
func (tb *Backend) ReadState(ctx context.Context, p int32) ([]txn.Record, error) {
	_, l, err := tb.statePartition(ctx, p)
	if err != nil {
		return nil, err
	}
	var out []txn.Record
	off, end := l.StartOffset(), l.HighWatermark()
	for off < end {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s, err := l.ReadUpTo(off, 1<<20, end)
		if err != nil {
			return nil, err
		}
		if s.Size == 0 {
			s.Release()
			break
		}
		buf := make([]byte, s.Size)
		_, err = s.File.ReadAt(buf, s.Pos)
		s.Release()
		if err != nil {
			return nil, err
		}
		recs, next, err := recordbatch.Walk(nil, buf, off, 64<<20)
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			out = append(out, txn.Record{Key: r.Key, Value: r.Value})
		}
		if next <= off {
			break
		}
		off = next
	}
	return out, nil
}

// StateEpoch is the leader epoch this broker leads state partition p in
// (txn.Backend).
func (tb *Backend) StateEpoch(ctx context.Context, p int32) (int32, error) {
	t, l, err := tb.statePartition(ctx, p)
	if err != nil {
		return 0, err
	}
	st, err := tb.cfg.Replicas.Lead(t, p, l)
	return st.LeaderEpoch, err
}

// NewProducerID hands out a producer id (txn.Backend).
func (tb *Backend) NewProducerID() (int64, error) { return tb.cfg.NewProducerID() }

// CommitOffsets makes a committed transaction's offsets the group's
// (txn.Backend).
func (tb *Backend) CommitOffsets(_ context.Context, g string, offsets map[txn.TP]txn.Offset) error {
	m := make(map[group.TopicPartition]group.Offset, len(offsets))
	for tp, o := range offsets {
		m[group.TopicPartition{Topic: tp.Topic, Partition: tp.Partition}] = group.Offset{Offset: o.Offset, Metadata: o.Metadata}
	}
	return tb.cfg.Offsets.Commit(g, m)
}

// stateBatch is one uncompressed batch of state records at time ts.
func stateBatch(recs []txn.Record, ts int64) []byte {
	rb := kmsg.RecordBatch{Magic: 2, LastOffsetDelta: int32(len(recs) - 1), FirstTimestamp: ts, MaxTimestamp: ts,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(len(recs))}
	for i, r := range recs {
		rec := kmsg.Record{OffsetDelta: int32(i), Key: r.Key, Value: r.Value}
		rec.Length = int32(len(rec.AppendTo(nil)) - 1)
		rb.Records = rec.AppendTo(rb.Records)
	}
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[recordbatch.OffLength:], uint32(len(b)-recordbatch.LengthPrefix))
	recordbatch.SetCRC(b)
	return b
}
