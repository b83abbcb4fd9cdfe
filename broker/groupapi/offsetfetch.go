package groupapi

// OffsetFetch.
//
// Returns a group's committed offsets; -1 for a partition without one. From
// v2 a null topic list asks for every committed partition, and group errors
// are also given at the top level. v8+ batches groups, each with its own
// error (NOT_COORDINATOR for groups another broker coordinates).
// RequireStable (v7+) holds back offsets a transaction is about to commit
// (markUnstable; the broker says which, Config.PendingTxnOffsets).
// v9's member id and epoch are checked in a consumer-protocol group
// (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH) and ignored in a classic one.
// v10 (topic ids) is not served.
//
// With an authorizer, as Kafka: a topic the principal may not Describe is
// left out of an all-topics answer and answered TOPIC_AUTHORIZATION_FAILED
// (without an offset) when named, so a group's offsets do not reveal the
// topics a member alone may see.

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/group"
	"github.com/tributary-io/tributary/broker/kafkaapi"
)

func init() {
	add(9, 0, 9, func(h *Handlers) kafkaapi.Serve { return kafkaapi.Start(h.serveOffsetFetch) })
}

// serveOffsetFetch refuses at once a request naming a group its client may
// not describe, and answers the others from their own goroutine (a
// cluster's offsets may be read from ZooKeeper).
func (h *Handlers) serveOffsetFetch(_ kafkaapi.Conn, req *kafkaapi.Request, r *kmsg.OffsetFetchRequest) *kafkaapi.Pending {
	if refused := h.offsetFetchRefused(req, r); refused != nil {
		return kafkaapi.Ready(req, refused)
	}
	describe := func(topic string) bool {
		return h.authz.MayTopic(req.Who, kmsg.ACLOperationDescribe, topic)
	}
	return kafkaapi.Later(req, func() kmsg.Response { return h.offsetFetch(r, describe) })
}

// offsetFetchRefused answers a request naming a group its client may not
// describe; nil when it may describe them all.
func (h *Handlers) offsetFetchRefused(req *kafkaapi.Request, r *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	groups := []string{r.Group}
	if r.Version >= 8 {
		groups = groups[:0]
		for _, g := range r.Groups {
			groups = append(groups, g.Group)
		}
	}
	for _, g := range groups {
		if !h.authz.MayGroup(req.Who, kmsg.ACLOperationDescribe, g) {
			resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
			resp.ErrorCode = acl.GroupRefused
			for _, g := range groups {
				rg := kmsg.NewOffsetFetchResponseGroup()
				rg.Group, rg.ErrorCode = g, acl.GroupRefused
				resp.Groups = append(resp.Groups, rg)
			}
			return resp
		}
	}
	return nil
}

// fetchedTopic is one topic of an OffsetFetch answer before it takes the
// shape of its version.
type fetchedTopic struct {
	topic      string
	partitions []fetchedPartition
}

type fetchedPartition struct {
	partition int32
	offset    group.Offset
	code      int16
}

// fetchOffsets answers one group: for the requested topics (nil: every
// committed partition), each partition's offset or the group's error.
func (h *Handlers) fetchOffsets(name string, requested map[string][]int32, all bool, describe func(string) bool) ([]fetchedTopic, *kerr.Error) {
	return h.fetchOffsetsAs(name, nil, -1, requested, all, describe)
}

// fetchOffsetsAs is fetchOffsets for a member naming itself (v9), checked
// against a consumer-protocol group's member epochs.
func (h *Handlers) fetchOffsetsAs(name string, memberID *string, epoch int32, requested map[string][]int32, all bool, describe func(string) bool) ([]fetchedTopic, *kerr.Error) {
	offsets, err := h.groups.FetchAs(name, memberID, epoch)
	if all {
		requested = map[string][]int32{}
		for tp := range offsets {
			if describe(tp.Topic) {
				requested[tp.Topic] = append(requested[tp.Topic], tp.Partition)
			}
		}
	}
	topics := make([]string, 0, len(requested))
	for t := range requested {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	var out []fetchedTopic
	for _, t := range topics {
		ft := fetchedTopic{topic: t}
		allowed := all || describe(t)
		parts := requested[t]
		sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
		for _, p := range parts {
			fp := fetchedPartition{partition: p, offset: group.Offset{Offset: -1}, code: codeOf(err)}
			if !allowed {
				fp.code = kerr.TopicAuthorizationFailed.Code
			} else if o, ok := offsets[group.TopicPartition{Topic: t, Partition: p}]; ok && err == nil {
				fp.offset = o
			}
			ft.partitions = append(ft.partitions, fp)
		}
		out = append(out, ft)
	}
	return out, err
}

// markUnstable sets UNSTABLE_OFFSET_COMMIT (RequireStable, v7+, KIP-447)
// on the partitions of topics whose offsets an unfinished transaction of
// the group name holds: clients retry it, rather than take the offset the
// commit is about to replace.
func (h *Handlers) markUnstable(name string, topics []fetchedTopic) {
	if h.pending == nil {
		return
	}
	pending := h.pending(name)
	if len(pending) == 0 {
		return
	}
	for i := range topics {
		for j := range topics[i].partitions {
			p := &topics[i].partitions[j]
			if p.code == 0 && pending[group.TopicPartition{Topic: topics[i].topic, Partition: p.partition}] {
				p.code = kerr.UnstableOffsetCommit.Code
			}
		}
	}
}

func (h *Handlers) offsetFetch(r *kmsg.OffsetFetchRequest, describe func(string) bool) *kmsg.OffsetFetchResponse {
	resp := kmsg.NewPtrOffsetFetchResponse()
	if r.Version >= 8 {
		for _, rg := range r.Groups {
			requested := map[string][]int32{}
			for _, t := range rg.Topics {
				requested[t.Topic] = append(requested[t.Topic], t.Partitions...)
			}
			topics, err := h.fetchOffsetsAs(rg.Group, rg.MemberID, rg.MemberEpoch, requested, rg.Topics == nil, describe)
			if r.RequireStable {
				h.markUnstable(rg.Group, topics)
			}
			sg := kmsg.NewOffsetFetchResponseGroup()
			sg.Group = rg.Group
			sg.ErrorCode = codeOf(err)
			for _, ft := range topics {
				st := kmsg.NewOffsetFetchResponseGroupTopic()
				st.Topic = ft.topic
				for _, fp := range ft.partitions {
					sp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					sp.Partition, sp.Offset, sp.ErrorCode = fp.partition, fp.offset.Offset, fp.code
					md := fp.offset.Metadata
					sp.Metadata = &md
					st.Partitions = append(st.Partitions, sp)
				}
				sg.Topics = append(sg.Topics, st)
			}
			resp.Groups = append(resp.Groups, sg)
		}
		return resp
	}
	requested := map[string][]int32{}
	for _, t := range r.Topics {
		requested[t.Topic] = append(requested[t.Topic], t.Partitions...)
	}
	topics, err := h.fetchOffsets(r.Group, requested, r.Topics == nil && r.Version >= 2, describe)
	if r.RequireStable {
		h.markUnstable(r.Group, topics)
	}
	resp.ErrorCode = codeOf(err)
	for _, ft := range topics {
		st := kmsg.NewOffsetFetchResponseTopic()
		st.Topic = ft.topic
		for _, fp := range ft.partitions {
			sp := kmsg.NewOffsetFetchResponseTopicPartition()
			sp.Partition, sp.Offset, sp.ErrorCode = fp.partition, fp.offset.Offset, fp.code
			md := fp.offset.Metadata
			sp.Metadata = &md
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
