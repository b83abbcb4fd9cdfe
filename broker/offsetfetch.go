package broker

// OffsetFetch.
//
// Returns a group's committed offsets; -1 for a partition without one. From
// v2 a null topic list asks for every committed partition, and group errors
// are also given at the top level. v8+ batches groups, each with its own
// error (NOT_COORDINATOR for groups another broker coordinates).
// RequireStable (v7+) holds back offsets a transaction is about to commit
// (offsetfetch_txn.go).
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

	"github.com/tributary-io/tributary/broker/group"
)

func init() {
	register(9, 0, 9, func(b *Broker, _ *conn, req *request) *pending {
		r := req.Request.(*kmsg.OffsetFetchRequest)
		if refused := b.offsetFetchRefused(req, r); refused != nil {
			return ready(encode(req, refused))
		}
		describe := func(topic string) bool {
			return b.mayTopic(req, kmsg.ACLOperationDescribe, topic)
		}
		return later(func() response { return encode(req, b.offsetFetch(r, describe)) })
	})
}

// offsetFetchRefused answers a request naming a group its client may not
// describe; nil when it may describe them all.
func (b *Broker) offsetFetchRefused(req *request, r *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	groups := []string{r.Group}
	if r.Version >= 8 {
		groups = groups[:0]
		for _, g := range r.Groups {
			groups = append(groups, g.Group)
		}
	}
	for _, g := range groups {
		if !b.mayGroup(req, kmsg.ACLOperationDescribe, g) {
			resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
			resp.ErrorCode = groupRefused
			for _, g := range groups {
				rg := kmsg.NewOffsetFetchResponseGroup()
				rg.Group, rg.ErrorCode = g, groupRefused
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
func (b *Broker) fetchOffsets(name string, requested map[string][]int32, all bool, describe func(string) bool) ([]fetchedTopic, *kerr.Error) {
	return b.fetchOffsetsAs(name, nil, -1, requested, all, describe)
}

// fetchOffsetsAs is fetchOffsets for a member naming itself (v9), checked
// against a consumer-protocol group's member epochs.
func (b *Broker) fetchOffsetsAs(name string, memberID *string, epoch int32, requested map[string][]int32, all bool, describe func(string) bool) ([]fetchedTopic, *kerr.Error) {
	offsets, err := b.groups.FetchAs(name, memberID, epoch)
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

func (b *Broker) offsetFetch(r *kmsg.OffsetFetchRequest, describe func(string) bool) *kmsg.OffsetFetchResponse {
	resp := kmsg.NewPtrOffsetFetchResponse()
	if r.Version >= 8 {
		for _, rg := range r.Groups {
			requested := map[string][]int32{}
			for _, t := range rg.Topics {
				requested[t.Topic] = append(requested[t.Topic], t.Partitions...)
			}
			topics, err := b.fetchOffsetsAs(rg.Group, rg.MemberID, rg.MemberEpoch, requested, rg.Topics == nil, describe)
			if r.RequireStable {
				b.markUnstable(rg.Group, topics)
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
	topics, err := b.fetchOffsets(r.Group, requested, r.Topics == nil && r.Version >= 2, describe)
	if r.RequireStable {
		b.markUnstable(r.Group, topics)
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
