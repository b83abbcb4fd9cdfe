package broker

// The transaction coordinator's place in the broker (broker/txn holds the
// coordinator itself). A transactional id's coordinator is the leader of
// its __transaction_state partition (Kafka's placement: the Java hash of
// the id modulo the partition count), so its state fails over with that
// partition's leadership, and the state is as durable as any acks=all
// write. A standalone broker leads every partition.
//
// The backend below gives the coordinator what it needs of the broker:
// its state partitions (created on first use, compacted), markers written
// into the partitions' logs, and the group offset store for the offsets a
// committed transaction carries.

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

// txnStateTopic is Kafka's name for the coordinator's state topic.
const txnStateTopic = txn.StateTopic

// startTxns starts the transaction coordinator.
func (b *Broker) startTxns() {
	cfg := b.cfg.Transactions
	if cfg.Logger == nil {
		cfg.Logger = b.logger
	}
	if cfg.Partitions <= 0 {
		cfg.Partitions = defaultTxnStatePartitions
	}
	if t, ok := b.meta.Topic(txnStateTopic); ok {
		// Fixed when the topic was made: placement depends on it.
		cfg.Partitions = t.Partitions()
	}
	b.txns = txn.New(txnBackend{b}, cfg)
}

// defaultTxnStatePartitions is Kafka's transaction.state.log.num.partitions.
const defaultTxnStatePartitions = 50

func (b *Broker) closeTxns() {
	if b.txns != nil {
		b.txns.Close()
	}
	b.closeTxnPeers()
}

// txnCoordinatorFor is the broker coordinating id: the leader of its
// state partition, or (before the topic exists) this broker, which
// creates it on the first request.
func (b *Broker) txnCoordinatorFor(id string) (cluster.Broker, bool) {
	t, ok := b.meta.Topic(txnStateTopic)
	if !ok {
		return b.meta.Self(), true
	}
	p := txn.PartitionFor(id, t.Partitions())
	if p >= t.Partitions() || t.Leaders[p] < 0 {
		return cluster.Broker{}, false
	}
	for _, br := range b.meta.Brokers() {
		if br.ID == t.Leaders[p] {
			return br, true
		}
	}
	return cluster.Broker{}, false
}

// txnCoordinatorRefusal is NOT_COORDINATOR when this broker does not
// coordinate id (its client asks FindCoordinator again), 0 when it does.
func (b *Broker) txnCoordinatorRefusal(id string) int16 {
	if br, ok := b.txnCoordinatorFor(id); !ok || br.ID != b.selfID {
		return kerr.NotCoordinator.Code
	}
	return 0
}

// txnStatePartition is the log of a state partition this broker leads,
// creating the topic on first use.
func (b *Broker) txnStatePartition(ctx context.Context, p int32) (cluster.Topic, *log.Log, error) {
	t, ok := b.meta.Topic(txnStateTopic)
	if !ok {
		var err error
		t, err = b.topics.CreateReplicated(ctx, txnStateTopic, b.txns.Partitions(), b.cfg.DefaultReplicationFactor,
			maps.Clone(internaltopic.Required(txnStateTopic)))
		if errors.Is(err, cluster.ErrTopicExists) {
			t, ok = b.meta.Topic(txnStateTopic)
			if !ok {
				return t, nil, errors.New("the transaction state topic exists but is not in this broker's view yet")
			}
		} else if err != nil {
			return t, nil, fmt.Errorf("creating %s: %w", txnStateTopic, err)
		} else {
			b.logger.Info("created the transaction state topic", "topic", txnStateTopic, "partitions", t.Partitions())
		}
	}
	part, code := b.replicas.Lookup(t, p)
	if code == 0 {
		code = part.Writable(1)
	}
	if code != 0 {
		return t, nil, kerr.ErrorForCode(code)
	}
	return t, part.Log(), nil
}

// txnBackend is the coordinator's view of the broker.
type txnBackend struct{ b *Broker }

func (tb txnBackend) AppendState(ctx context.Context, p int32, epoch int32, recs []txn.Record) error {
	t, l, err := tb.b.txnStatePartition(ctx, p)
	if err != nil {
		return err
	}
	if st, err := tb.b.replicas.Lead(t, p, l); err != nil {
		return err
	} else if st.LeaderEpoch != epoch {
		return fmt.Errorf("%w: state read in leader epoch %d, this broker leads it in epoch %d", kerr.NotCoordinator, epoch, st.LeaderEpoch)
	}
	res, err := l.Append(stateBatch(recs, time.Now().UnixMilli()))
	if err != nil {
		return err
	}
	return tb.b.replicas.WaitReplicated(ctx, t, p, l, res.LastOffset)
}

func (tb txnBackend) ReadState(ctx context.Context, p int32) ([]txn.Record, error) {
	_, l, err := tb.b.txnStatePartition(ctx, p)
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

func (tb txnBackend) StateEpoch(ctx context.Context, p int32) (int32, error) {
	t, l, err := tb.b.txnStatePartition(ctx, p)
	if err != nil {
		return 0, err
	}
	st, err := tb.b.replicas.Lead(t, p, l)
	return st.LeaderEpoch, err
}

func (tb txnBackend) NewProducerID() (int64, error) {
	return tb.b.pids.Next("")
}

func (tb txnBackend) CommitOffsets(_ context.Context, g string, offsets map[txn.TP]txn.Offset) error {
	m := make(map[group.TopicPartition]group.Offset, len(offsets))
	for tp, o := range offsets {
		m[group.TopicPartition{Topic: tp.Topic, Partition: tp.Partition}] = group.Offset{Offset: o.Offset, Metadata: o.Metadata}
	}
	return tb.b.groups.Store().Commit(g, m)
}

// WriteMarkers writes the markers of one transaction, each partition's
// into its leader's log: this broker's own directly, others' with
// WriteTxnMarkers (broker/txnapi). It names the partitions that
// failed, so the coordinator retries only those.
func (tb txnBackend) WriteMarkers(ctx context.Context, pid int64, epoch int16, commit bool, coordEpoch int32, parts []txn.TP) ([]txn.TP, error) {
	b := tb.b
	remote := map[int32][]txn.TP{}
	var failed []txn.TP
	var errs []error
	for _, tp := range parts {
		t, ok := b.meta.Topic(tp.Topic)
		if !ok || tp.Partition >= t.Partitions() {
			continue // deleted: nothing left to end
		}
		if leader := t.Leaders[tp.Partition]; leader != b.selfID {
			remote[leader] = append(remote[leader], tp)
			continue
		}
		if code := b.writeMarker(ctx, t, tp.Partition, pid, epoch, commit, coordEpoch); code != 0 {
			failed = append(failed, tp)
			errs = append(errs, fmt.Errorf("%s[%d]: %w", tp.Topic, tp.Partition, kerr.ErrorForCode(code)))
		}
	}
	for leader, tps := range remote {
		notWritten, err := b.sendMarkers(ctx, leader, pid, epoch, commit, coordEpoch, tps)
		if err != nil {
			failed = append(failed, notWritten...)
			errs = append(errs, fmt.Errorf("markers to broker %d: %w", leader, err))
		}
	}
	return failed, errors.Join(errs...)
}

// writeMarker appends one marker to a partition this broker leads and
// waits until it is replicated (acks=all).
func (b *Broker) writeMarker(ctx context.Context, t cluster.Topic, p int32, pid int64, epoch int16, commit bool, coordEpoch int32) int16 {
	part, code := b.replicas.Lookup(t, p)
	if code == 0 {
		code = part.Writable(1)
	}
	if code != 0 {
		return code
	}
	off, err := part.Log().AppendMarker(pid, epoch, commit, coordEpoch)
	if errors.Is(err, log.ErrCoordinatorFenced) {
		b.logger.Warn("refused a transaction marker from a fenced coordinator", "topic", t.Name, "partition", p, "producer_id", pid, "err", err)
		return kerr.TransactionCoordinatorFenced.Code
	}
	if err != nil {
		return b.logs.StorageError(part.Log(), err)
	}
	if code, err := part.WaitAcked(ctx, off); err != nil {
		if errors.Is(err, context.Canceled) {
			return kerr.RequestTimedOut.Code
		}
		return code
	}
	b.txnMarkerWritten(commit)
	return 0
}

// sendMarkers asks another broker, the leader of tps, to write markers,
// and returns those it did not write (all of them when it did not answer).
func (b *Broker) sendMarkers(ctx context.Context, leader int32, pid int64, epoch int16, commit bool, coordEpoch int32, tps []txn.TP) ([]txn.TP, error) {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version = 1
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = pid, epoch, commit, coordEpoch
	byTopic := map[string][]int32{}
	for _, tp := range tps {
		byTopic[tp.Topic] = append(byTopic[tp.Topic], tp.Partition)
	}
	for topic, ps := range byTopic {
		mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		mt.Topic, mt.Partitions = topic, ps
		m.Topics = append(m.Topics, mt)
	}
	req.Markers = append(req.Markers, m)
	resp := kmsg.NewPtrWriteTxnMarkersResponse()
	timeout := 30 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	if err := b.interBrokerRoundTrip(leader, req, resp, timeout); err != nil {
		return tps, err
	}
	answered := map[txn.TP]bool{}
	var failed []txn.TP
	var errs []error
	for _, rm := range resp.Markers {
		for _, rt := range rm.Topics {
			for _, rp := range rt.Partitions {
				tp := txn.TP{Topic: rt.Topic, Partition: rp.Partition}
				answered[tp] = true
				if rp.ErrorCode != 0 && rp.ErrorCode != kerr.UnknownTopicOrPartition.Code {
					failed = append(failed, tp)
					errs = append(errs, fmt.Errorf("%s[%d]: %w", rt.Topic, rp.Partition, kerr.ErrorForCode(rp.ErrorCode)))
				}
			}
		}
	}
	for _, tp := range tps {
		if !answered[tp] {
			failed = append(failed, tp)
			errs = append(errs, fmt.Errorf("%s[%d]: broker %d did not answer for it", tp.Topic, tp.Partition, leader))
		}
	}
	return failed, errors.Join(errs...)
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
