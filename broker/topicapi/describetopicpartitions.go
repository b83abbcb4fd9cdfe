package topicapi

// DescribeTopicPartitions (key 75, version 0; KIP-966): topics' partitions
// as Metadata describes them (leader, epoch, replicas, ISR, offline
// replicas), in pages. Java's admin client (kafka-topics --describe, 3.8
// and later) and kafka-python ask it rather than Metadata when the broker
// advertises it. Topics come sorted by name, all of them when the request
// names none; a page holds at most ResponsePartitionLimit partitions
// (capped at 2000, Kafka's default), and NextCursor names where the next
// page starts. There is no ELR (eligible leader replicas): those lists are
// empty. With an authorizer a named topic the principal may not Describe is
// TOPIC_AUTHORIZATION_FAILED, and a full listing leaves it out.

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/kafkaapi"
	"github.com/tributary-io/tributary/cluster"
)

// maxDescribePartitions caps a page (Kafka's
// max.request.partition.size.limit default).
const maxDescribePartitions = 2000

func init() {
	add(75, 0, 0, func(h *Handlers) kafkaapi.Serve { return kafkaapi.Now(h.describeTopicPartitions) })
}

func (h *Handlers) describeTopicPartitions(who *kafkaapi.Request, req *kmsg.DescribeTopicPartitionsRequest) *kmsg.DescribeTopicPartitionsResponse {
	resp := kmsg.NewPtrDescribeTopicPartitionsResponse()
	live := map[int32]bool{}
	for _, br := range h.meta.Brokers() {
		live[br.ID] = true
	}
	mayDescribe := func(name string) bool {
		return h.authz.MayTopic(who.Who, kmsg.ACLOperationDescribe, name)
	}

	// The topics to describe, sorted, each known one with its assignment.
	type entry struct {
		name string
		t    cluster.Topic
		code int16
	}
	var topics []entry
	if len(req.Topics) == 0 {
		for _, t := range h.meta.Topics() {
			if mayDescribe(t.Name) {
				topics = append(topics, entry{name: t.Name, t: t})
			}
		}
	} else {
		seen := map[string]bool{}
		for _, rt := range req.Topics {
			if seen[rt.Topic] {
				continue
			}
			seen[rt.Topic] = true
			e := entry{name: rt.Topic}
			switch t, ok := h.meta.Topic(rt.Topic); {
			case !mayDescribe(rt.Topic):
				e.code = kerr.TopicAuthorizationFailed.Code
			case !ok:
				e.code = kerr.UnknownTopicOrPartition.Code
			default:
				e.t = t
			}
			topics = append(topics, e)
		}
	}
	slices.SortFunc(topics, func(a, b entry) int { return strings.Compare(a.name, b.name) })

	limit := req.ResponsePartitionLimit
	if limit <= 0 || limit > maxDescribePartitions {
		limit = maxDescribePartitions
	}
	var from int32
	if c := req.Cursor; c != nil {
		i, _ := slices.BinarySearchFunc(topics, c.Topic, func(e entry, name string) int { return strings.Compare(e.name, name) })
		topics = topics[i:]
		if len(topics) > 0 && topics[0].name == c.Topic {
			from = max(c.Partition, 0)
		}
	}
	n := int32(0)
	for i, e := range topics {
		name := e.name
		st := kmsg.NewDescribeTopicPartitionsResponseTopic()
		st.Topic, st.ErrorCode = &name, e.code
		if e.code != 0 {
			resp.Topics = append(resp.Topics, st)
			continue
		}
		st.TopicID = e.t.ID
		md := topicMetadata(e.t, live)
		start := int32(0)
		if i == 0 {
			start = from
		}
		for p := start; p < int32(len(md.Partitions)); p++ {
			if n == limit {
				resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: p}
				break
			}
			mp := md.Partitions[p]
			sp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
			sp.ErrorCode, sp.Partition, sp.LeaderID, sp.LeaderEpoch = mp.ErrorCode, mp.Partition, mp.Leader, mp.LeaderEpoch
			sp.Replicas, sp.ISR, sp.OfflineReplicas = mp.Replicas, mp.ISR, mp.OfflineReplicas
			sp.EligibleLeaderReplicas, sp.LastKnownELR = []int32{}, []int32{}
			st.Partitions = append(st.Partitions, sp)
			n++
		}
		resp.Topics = append(resp.Topics, st)
		if resp.NextCursor != nil {
			break
		}
		if n == limit && i+1 < len(topics) {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: topics[i+1].name, Partition: 0}
			break
		}
	}
	return resp
}
