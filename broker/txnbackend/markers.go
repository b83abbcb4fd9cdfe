package txnbackend

// Ending a transaction in its partitions: a commit or abort marker in
// each partition's leader log, this broker's own directly, the others'
// through their leaders (WriteTxnMarkers).

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/txn"
	"github.com/tributary-io/tributary/cluster"
)

// WriteMarkers writes the markers of one transaction, each partition's
// into its leader's log: this broker's own directly, others' with
// WriteTxnMarkers (broker/txnapi). It names the partitions that failed,
// so the coordinator retries only those (txn.Backend).
func (tb *Backend) WriteMarkers(ctx context.Context, pid int64, epoch int16, commit bool, coordEpoch int32, parts []txn.TP) ([]txn.TP, error) {
	remote := map[int32][]txn.TP{}
	var failed []txn.TP
	var errs []error
	for _, tp := range parts {
		t, ok := tb.cfg.Meta.Topic(tp.Topic)
		if !ok || tp.Partition >= t.Partitions() {
			continue // deleted: nothing left to end
		}
		if leader := t.Leaders[tp.Partition]; leader != tb.cfg.Self {
			remote[leader] = append(remote[leader], tp)
			continue
		}
		if code := tb.WriteMarker(ctx, t, tp.Partition, pid, epoch, commit, coordEpoch); code != 0 {
			failed = append(failed, tp)
			errs = append(errs, fmt.Errorf("%s[%d]: %w", tp.Topic, tp.Partition, kerr.ErrorForCode(code)))
		}
	}
	for leader, tps := range remote {
		notWritten, err := tb.sendMarkers(ctx, leader, pid, epoch, commit, coordEpoch, tps)
		if err != nil {
			failed = append(failed, notWritten...)
			errs = append(errs, fmt.Errorf("markers to broker %d: %w", leader, err))
		}
	}
	return failed, errors.Join(errs...)
}

// WriteMarker appends one marker to a partition this broker leads and
// waits until it is replicated (acks=all); it returns the partition's
// error code for WriteTxnMarkers.
func (tb *Backend) WriteMarker(ctx context.Context, t cluster.Topic, p int32, pid int64, epoch int16, commit bool, coordEpoch int32) int16 {
	part, code := tb.cfg.Replicas.Lookup(t, p)
	if code == 0 {
		code = part.Writable(1)
	}
	if code != 0 {
		return code
	}
	off, err := part.Log().AppendMarker(pid, epoch, commit, coordEpoch)
	if errors.Is(err, log.ErrCoordinatorFenced) {
		tb.cfg.Logger.Warn("refused a transaction marker from a fenced coordinator", "topic", t.Name, "partition", p, "producer_id", pid, "err", err)
		return kerr.TransactionCoordinatorFenced.Code
	}
	if err != nil {
		return tb.cfg.StorageError(part.Log(), err)
	}
	if code, err := part.WaitAcked(ctx, off); err != nil {
		if errors.Is(err, context.Canceled) {
			return kerr.RequestTimedOut.Code
		}
		return code
	}
	i := 0
	if commit {
		i = 1
	}
	tb.markers[i].Add(1)
	return 0
}

// sendMarkers asks another broker, the leader of tps, to write markers,
// and returns those it did not write (all of them when it did not answer).
func (tb *Backend) sendMarkers(ctx context.Context, leader int32, pid int64, epoch int16, commit bool, coordEpoch int32, tps []txn.TP) ([]txn.TP, error) {
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
	if err := tb.RoundTrip(leader, req, resp, timeoutOf(ctx, 30*time.Second)); err != nil {
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

// timeoutOf is what is left of ctx's deadline, or def without one.
func timeoutOf(ctx context.Context, def time.Duration) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return time.Until(d)
	}
	return def
}
