package dataapi

// OffsetForLeaderEpoch.
//
// Answers, for each partition this broker leads, where the requested leader
// epoch ends in its log (log.EndOffsetForEpoch): the start of the next
// epoch it knows, or its log end offset for its current epoch; an epoch
// older than every one the log still holds (DeleteRecords or retention
// moved the log start past it) ends at the log start, as in Kafka. A follower
// that starts following asks it with its own latest epoch and truncates its
// log there (broker/replication/truncate.go), so that no two replicas hold different
// records at one offset; a consumer may ask it to detect truncation
// (KIP-320). CurrentLeaderEpoch, when set, fences a requester whose view
// of the leadership is older (FENCED_LEADER_EPOCH) or newer
// (UNKNOWN_LEADER_EPOCH) than this broker's. With the authorizer on, a
// follower (replica id >= 0, v3+) needs ClusterAction on the cluster and a
// consumer Describe on the topic, as in Kafka. Versions 0-4.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/kafkaapi"
	"github.com/tributary-io/tributary/cluster"
)

func init() {
	add(23, 0, 4, func(h *Handlers) kafkaapi.Serve { return kafkaapi.Now(h.offsetForLeaderEpoch) })
}

func (h *Handlers) offsetForLeaderEpoch(req *kafkaapi.Request, r *kmsg.OffsetForLeaderEpochRequest) *kmsg.OffsetForLeaderEpochResponse {
	resp := r.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	follower := r.Version >= 3 && r.ReplicaID >= 0
	clusterOK := !follower || h.authz.MayCluster(req.Who, kmsg.ACLOperationClusterAction)
	for _, rt := range r.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		t, tcode := h.topics.Lookup(rt.Topic, false)
		switch {
		case !clusterOK:
			tcode = kerr.ClusterAuthorizationFailed.Code
		case !follower && !h.authz.MayTopic(req.Who, kmsg.ACLOperationDescribe, rt.Topic):
			tcode = kerr.TopicAuthorizationFailed.Code
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.ErrorCode = tcode
			if tcode == 0 {
				sp.ErrorCode, sp.LeaderEpoch, sp.EndOffset = h.epochEnd(t, rp)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// epochEnd answers one partition.
func (h *Handlers) epochEnd(t cluster.Topic, rp kmsg.OffsetForLeaderEpochRequestTopicPartition) (int16, int32, int64) {
	part, code := h.replicas.Lookup(t, rp.Partition)
	if code != 0 {
		return code, -1, -1
	}
	// Leading: the epoch is recorded before it is answered for.
	current, code := part.LeaderEpoch()
	if code != 0 {
		return code, -1, -1
	}
	if rp.CurrentLeaderEpoch >= 0 && current >= 0 {
		switch {
		case rp.CurrentLeaderEpoch < current:
			return kerr.FencedLeaderEpoch.Code, -1, -1
		case rp.CurrentLeaderEpoch > current:
			return kerr.UnknownLeaderEpoch.Code, -1, -1
		}
	}
	epoch, end := part.Log().EndOffsetForEpoch(rp.LeaderEpoch)
	return 0, epoch, end
}
