package txnapi

// TxnOffsetCommit.
//
// v0–3: a transactional producer commits a consumer group's offsets as
// part of its transaction (Write on the transactional id, Read on the
// group and on each topic). Clients send it to the group's coordinator,
// as Kafka wants (Java and kgo look the group's coordinator up again on
// NOT_COORDINATOR, never the transaction's). Tributary's transaction
// coordinator keeps the offsets in the transaction's durable state, so
// the group's coordinator checks the request (the ACLs, and v3's
// generation against the group, as OffsetCommit's) and, when another
// broker coordinates the transactional id, forwards the offsets there over
// the inter-broker connection, without the member fields it already
// checked; that broker trusts a forwarder holding ClusterAction for the
// ACLs. A coordinator of the id asked directly (a client that does so, or
// the forwarded request) stores them when no membership is to be checked
// elsewhere. The offsets reach the group when the transaction commits,
// never before; an abort drops them. Metadata over 4 KiB gets
// OFFSET_METADATA_TOO_LARGE. (Before the forwarding, a transaction whose
// id and group had different coordinators could never commit its
// offsets: each broker sent the client to the other.)

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/group"
	"github.com/tributary-io/tributary/broker/groupapi"
	"github.com/tributary-io/tributary/broker/kafkaapi"
	"github.com/tributary-io/tributary/broker/txn"
)

func init() {
	add(28, 0, 3, func(h *Handlers) kafkaapi.Serve { return kafkaapi.Async(h.txnOffsetCommit) })
}

func (h *Handlers) txnOffsetCommit(req *kafkaapi.Request, r *kmsg.TxnOffsetCommitRequest) *kmsg.TxnOffsetCommitResponse {
	resp := r.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	forwarded := h.authz != nil && h.authz.MayCluster(req.Who, kmsg.ACLOperationClusterAction)
	code := h.txnOffsetCommitCode(req, r, forwarded)
	codes := map[txn.TP]int16{}
	offsets := map[txn.TP]txn.Offset{}
	for _, t := range r.Topics {
		tcode := code
		if tcode == 0 && !forwarded && !h.authz.MayTopic(req.Who, kmsg.ACLOperationRead, t.Topic) {
			tcode = acl.TopicRefused
		}
		ct, known := h.meta.Topic(t.Topic)
		for _, p := range t.Partitions {
			tp := txn.TP{Topic: t.Topic, Partition: p.Partition}
			pcode := tcode
			switch {
			case pcode != 0:
			case !known || p.Partition < 0 || p.Partition >= ct.Partitions():
				pcode = kerr.UnknownTopicOrPartition.Code
			case p.Metadata != nil && len(*p.Metadata) > groupapi.MaxCommitMetadata:
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
		ctx, cancel := h.ctx()
		defer cancel()
		if h.refusal(r.TransactionalID) != 0 {
			h.forwardTxnOffsets(ctx, r, offsets, codes)
		} else if kerr := h.txns.CommitOffsets(ctx, r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Group, offsets); kerr != nil {
			for tp := range offsets {
				codes[tp] = Code(kerr, r.Version, 3)
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
// each partition is to be looked at: the ACLs on the id and the group
// (passed by a forwarding broker's ClusterAction), which broker should be
// asked, and (v3) the committer's membership in the group.
func (h *Handlers) txnOffsetCommitCode(req *kafkaapi.Request, r *kmsg.TxnOffsetCommitRequest, forwarded bool) int16 {
	switch {
	case forwarded:
	case !h.authz.MayTxn(req.Who, kmsg.ACLOperationWrite, r.TransactionalID):
		return acl.TxnRefused
	case !h.authz.MayGroup(req.Who, kmsg.ACLOperationRead, r.Group):
		return acl.GroupRefused
	}
	member := r.Version >= 3 && (r.Generation >= 0 || r.MemberID != "" || r.InstanceID != nil)
	ownsGroup, ownsTxn := h.ownsGroup(r.Group), h.refusal(r.TransactionalID) == 0
	if !ownsGroup && (member || !ownsTxn) {
		// The group's coordinator checks the member, then forwards.
		return kerr.NotCoordinator.Code
	}
	if member {
		// Admission only: no offsets, so nothing is stored.
		cr := group.CommitRequest{Group: r.Group, MemberID: r.MemberID, InstanceID: r.InstanceID, Generation: r.Generation}
		if err := h.groups.Commit(cr); err != nil {
			return err.Code
		}
	}
	return 0
}

// forwardTxnOffsets sends offsets, checked here, to the broker
// coordinating r's transactional id, and sets each partition's answer in
// codes. A coordinator that cannot be reached is COORDINATOR_NOT_AVAILABLE,
// which clients retry after looking the group's coordinator up again.
func (h *Handlers) forwardTxnOffsets(ctx context.Context, r *kmsg.TxnOffsetCommitRequest, offsets map[txn.TP]txn.Offset, codes map[txn.TP]int16) {
	fail := func(code int16) {
		for tp := range offsets {
			codes[tp] = code
		}
	}
	coord, ok := h.txnCoordinator(r.TransactionalID)
	if !ok {
		fail(kerr.CoordinatorNotAvailable.Code)
		return
	}
	fwd := kmsg.NewPtrTxnOffsetCommitRequest()
	fwd.Version = 3
	fwd.TransactionalID, fwd.Group, fwd.ProducerID, fwd.ProducerEpoch = r.TransactionalID, r.Group, r.ProducerID, r.ProducerEpoch
	fwd.Generation = -1
	byTopic := map[string]int{}
	for tp, o := range offsets {
		i, ok := byTopic[tp.Topic]
		if !ok {
			i = len(fwd.Topics)
			byTopic[tp.Topic] = i
			t := kmsg.NewTxnOffsetCommitRequestTopic()
			t.Topic = tp.Topic
			fwd.Topics = append(fwd.Topics, t)
		}
		p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		p.Partition, p.Offset, p.LeaderEpoch = tp.Partition, o.Offset, o.LeaderEpoch
		if o.Metadata != "" {
			md := o.Metadata
			p.Metadata = &md
		}
		fwd.Topics[i].Partitions = append(fwd.Topics[i].Partitions, p)
	}
	resp := kmsg.NewPtrTxnOffsetCommitResponse()
	timeout := 30 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	if err := h.peers(coord.ID, fwd, resp, timeout); err != nil {
		h.logger.Warn("forwarding transactional offsets to the transaction coordinator", "transactional_id", r.TransactionalID,
			"group", r.Group, "coordinator", coord.ID, "err", err)
		fail(kerr.CoordinatorNotAvailable.Code)
		return
	}
	fail(kerr.CoordinatorNotAvailable.Code) // any partition the answer leaves out
	var held []txn.TP
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			tp := txn.TP{Topic: t.Topic, Partition: p.Partition}
			if _, ok := offsets[tp]; ok {
				codes[tp] = p.ErrorCode
				if p.ErrorCode == kerr.ProducerFenced.Code {
					codes[tp] = Code(kerr.ProducerFenced, r.Version, 3)
				}
				if p.ErrorCode == 0 {
					held = append(held, tp)
				}
			}
		}
	}
	if len(held) > 0 {
		h.rememberForwarded(ctx, r, held) // forwarded.go
	}
}
