package mirror

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Reading a target partition backwards for the last copies of source
// partitions. The scan starts with the newest 256 records and widens ×4 a
// window (capped at maxWindow records) until every wanted source partition
// was found or the partition's start is reached: a partition the mirror
// fed recently costs one small fetch, and one never fed costs a full read,
// which only happens for a new target or a source partition that has not
// been written to in a long time.
const (
	firstWindow = 256
	maxWindow   = 1 << 20
	// fetchBytes bounds one fetch of a scan; a window may take several.
	fetchBytes = 8 << 20
)

// The tail is read as the target's read_committed consumers see it, up to
// the last stable offset: copies of an aborted transaction were never
// made, and those of a transaction still open are not yet (the partition's
// producer was initialized before, so none of its own is; see txn.go).
// Without transactions this is the high watermark, as before.

// lastCopies reads target partition tp of topic backwards and returns, for
// each source partition in want, the source offset of its newest copy from
// cluster (the last hop of the copy's origin header). A partition absent
// from the result has no copy in the target partition; legacy is then true
// when the scan met copies from cluster by an older mirror, whose origin
// header named the cluster only.
func (t *target) lastCopies(ctx context.Context, topic string, tp int32, cluster string, want map[int32]bool) (found map[int32]int64, legacy bool, err error) {
	adm := kadm.NewClient(t.client)
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return nil, false, fmt.Errorf("listing the start offsets of target topic %s: %w", topic, err)
	}
	ends, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		return nil, false, fmt.Errorf("listing the end offsets of target topic %s: %w", topic, err)
	}
	start, ok1 := starts.Lookup(topic, tp)
	end, ok2 := ends.Lookup(topic, tp)
	if !ok1 || !ok2 || start.Err != nil || end.Err != nil {
		return nil, false, fmt.Errorf("listing the offsets of target partition %s/%d: %v %v", topic, tp, start.Err, end.Err)
	}
	found = map[int32]int64{}
	hi := end.Offset
	for w := int64(firstWindow); hi > start.Offset && len(found) < len(want); w = min(4*w, maxWindow) {
		lo := max(start.Offset, hi-w)
		window := map[int32]int64{}
		err := t.read(ctx, topic, tp, lo, hi, func(r *kgo.Record) {
			v, ok := header(r.Headers, OriginHeader)
			if !ok {
				return
			}
			h, ok := lastHop([]byte(v))
			switch {
			case ok && h.cluster == cluster && h.partition >= 0 && want[h.partition]:
				window[h.partition] = max(window[h.partition], h.offset)
			case ok && h.cluster == cluster && h.partition < 0:
				legacy = true
			}
		})
		if err != nil {
			return nil, false, err
		}
		for p, o := range window {
			if _, newer := found[p]; !newer {
				found[p] = o
			}
		}
		hi = lo
	}
	return found, legacy, nil
}

// read calls fn for every record of target partition tp in [lo, hi), in
// offset order, fetching from the partition's leader directly.
func (t *target) read(ctx context.Context, topic string, tp int32, lo, hi int64, fn func(*kgo.Record)) error {
	leader, id, err := t.leader(ctx, topic, tp)
	if err != nil {
		return err
	}
	for pos := lo; pos < hi; {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID = -1
		req.MaxWaitMillis = 0
		req.MinBytes = 0
		req.MaxBytes = fetchBytes
		req.IsolationLevel = 1 // read_committed
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, id
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = tp, pos, fetchBytes
		rp.CurrentLeaderEpoch, rp.LogStartOffset = -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, t.client.Broker(int(leader)))
		if err != nil {
			return fmt.Errorf("reading target partition %s/%d at %d: %w", topic, tp, pos, err)
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return fmt.Errorf("reading target partition %s/%d at %d: %w", topic, tp, pos, err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return fmt.Errorf("reading target partition %s/%d at %d: the answer holds no partition", topic, tp, pos)
		}
		fp, next := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Offset: pos, Topic: topic, Partition: tp, IsolationLevel: kgo.ReadCommitted()},
			&resp.Topics[0].Partitions[0], kgo.DefaultDecompressor(), nil)
		if fp.Err != nil {
			return fmt.Errorf("reading target partition %s/%d at %d: %w", topic, tp, pos, fp.Err)
		}
		for _, r := range fp.Records {
			if r.Offset >= hi {
				return nil
			}
			fn(r)
		}
		if next <= pos {
			return nil // nothing more up to the high watermark (a gap at the end)
		}
		pos = next
	}
	return nil
}

// leader returns the broker leading target partition tp, and the topic's id
// (fetches from v13 name topics by id).
func (t *target) leader(ctx context.Context, topic string, tp int32) (int32, [16]byte, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, t.client)
	if err != nil {
		return 0, [16]byte{}, fmt.Errorf("metadata of target topic %s: %w", topic, err)
	}
	for _, mt := range resp.Topics {
		if err := kerr.ErrorForCode(mt.ErrorCode); err != nil {
			return 0, [16]byte{}, fmt.Errorf("metadata of target topic %s: %w", topic, err)
		}
		for _, mp := range mt.Partitions {
			if mp.Partition == tp {
				if err := kerr.ErrorForCode(mp.ErrorCode); err != nil || mp.Leader < 0 {
					return 0, [16]byte{}, fmt.Errorf("target partition %s/%d has no leader now (%v)", topic, tp, err)
				}
				return mp.Leader, mt.TopicID, nil
			}
		}
	}
	return 0, [16]byte{}, fmt.Errorf("target topic %s has no partition %d", topic, tp)
}

// copyBefore returns the target offset of the newest copy, in target
// partition tp of topic, of a record of source partition sp of cluster
// below source offset below; found is false when the partition holds none.
func (t *target) copyBefore(ctx context.Context, topic string, tp int32, cluster string, sp int32, below int64) (offset int64, found bool, err error) {
	adm := kadm.NewClient(t.client)
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return 0, false, err
	}
	ends, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		return 0, false, err
	}
	start, ok1 := starts.Lookup(topic, tp)
	end, ok2 := ends.Lookup(topic, tp)
	if !ok1 || !ok2 || start.Err != nil || end.Err != nil {
		return 0, false, fmt.Errorf("listing the offsets of target partition %s/%d: %v %v", topic, tp, start.Err, end.Err)
	}
	hi := end.Offset
	for w := int64(firstWindow); hi > start.Offset; w = min(4*w, maxWindow) {
		lo := max(start.Offset, hi-w)
		err := t.read(ctx, topic, tp, lo, hi, func(r *kgo.Record) {
			v, ok := header(r.Headers, OriginHeader)
			if !ok {
				return
			}
			if h, ok := lastHop([]byte(v)); ok && h.cluster == cluster && h.partition == sp && h.offset < below {
				offset, found = r.Offset, true
			}
		})
		if err != nil || found {
			return offset, found, err
		}
		hi = lo
	}
	return start.Offset, false, nil
}
