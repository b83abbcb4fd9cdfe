package broker

// TxnOffsetCommit.
//
// v0–3: a transactional producer commits a consumer group's offsets as
// part of its transaction (Write on the transactional id, Read on the
// group and on each topic). Kafka sends it to the group coordinator;
// Tributary's transaction coordinator keeps the offsets in the
// transaction's durable state, so it must be the broker asked: the
// request goes to the id's coordinator, whichever broker coordinates the
// group (the group's offset store is shared). v3 (KIP-447) carries the
// member's generation, checked against the group as OffsetCommit's is.
// The offsets reach the group when the transaction commits, never before;
// an abort drops them. Metadata over 4 KiB gets OFFSET_METADATA_TOO_LARGE.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/group"
	"github.com/tributary-io/tributary/broker/txn"
)

func init() {
	register(28, 0, 3, async((*Broker).txnOffsetCommit))
}

func (b *Broker) txnOffsetCommit(req *request, r *kmsg.TxnOffsetCommitRequest) *kmsg.TxnOffsetCommitResponse {
	resp := r.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	code := b.txnOffsetCommitCode(req, r)
	codes := map[txn.TP]int16{}
	offsets := map[txn.TP]txn.Offset{}
	for _, t := range r.Topics {
		tcode := code
		if tcode == 0 && !b.mayTopic(req, kmsg.ACLOperationRead, t.Topic) {
			tcode = topicRefused
		}
		ct, known := b.meta.Topic(t.Topic)
		for _, p := range t.Partitions {
			tp := txn.TP{Topic: t.Topic, Partition: p.Partition}
			pcode := tcode
			switch {
			case pcode != 0:
			case !known || p.Partition < 0 || p.Partition >= ct.Partitions():
				pcode = kerr.UnknownTopicOrPartition.Code
			case p.Metadata != nil && len(*p.Metadata) > maxCommitMetadata:
				pcode = kerr.OffsetMetadataTooLarge.Code
			default:
				o := txn.Offset{Offset: p.Offset, LeaderEpoch: p.LeaderEpoch}
				if p.Metadata != nil {
					o.Metadata = *p.Metadata
				}
				offsets[tp] = o
			}
			codes[tp] = pcode
		}
	}
	if len(offsets) > 0 {
		ctx, cancel := b.txnCtx()
		defer cancel()
		if kerr := b.txns.CommitOffsets(ctx, r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Group, offsets); kerr != nil {
			for tp := range offsets {
				codes[tp] = txnCode(kerr, r.Version, 3)
			}
		}
	}
	for _, t := range r.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, codes[txn.TP{Topic: t.Topic, Partition: p.Partition}]
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// txnOffsetCommitCode is the answer for every partition of r, or 0 when
// each partition is to be looked at: the ACLs on the id and the group, the
// coordinator, and (v3) the committer's membership in the group.
func (b *Broker) txnOffsetCommitCode(req *request, r *kmsg.TxnOffsetCommitRequest) int16 {
	switch {
	case !b.mayTxn(req, kmsg.ACLOperationWrite, r.TransactionalID):
		return txnRefused
	case !b.mayGroup(req, kmsg.ACLOperationRead, r.Group):
		return groupRefused
	}
	if code := b.txnCoordinatorRefusal(r.TransactionalID); code != 0 {
		return code
	}
	if r.Version >= 3 && (r.Generation >= 0 || r.MemberID != "" || r.InstanceID != nil) {
		// Admission only: no offsets, so nothing is stored.
		cr := group.CommitRequest{Group: r.Group, MemberID: r.MemberID, InstanceID: r.InstanceID, Generation: r.Generation}
		if err := b.groups.Commit(cr); err != nil {
			return err.Code
		}
	}
	return 0
}
