package topicapi

// Metadata.
//
// Answers from the cluster view (cluster.Metadata), so every broker of a
// cluster answers the same. A partition of a replicated topic is described
// by its state node (leader, leader epoch, ISR, offline replicas); any
// other partition has one replica, its leader. Each topic carries its persistent id, and a request may name
// a topic by id alone (v10+). Unknown topics are created when auto-creation is enabled
// and the client allows it (always below v4, as in Kafka).
//
// A request may name at most maxMetadataTopics topics. The limit is checked
// on the raw frame, before decoding: every named topic costs a few bytes on
// the wire but tens in memory, decoded and again answered, so a frame of
// empty names would otherwise make the broker allocate many times its size.
// A client that needs every topic asks with a null list.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/internaltopic"
	"github.com/tributary-io/tributary/broker/kafkaapi"
	"github.com/tributary-io/tributary/broker/netserver"
	"github.com/tributary-io/tributary/cluster"
)

func init() {
	add(3, 0, 12, func(h *Handlers) kafkaapi.Serve {
		return kafkaapi.Start(func(c kafkaapi.Conn, req *kafkaapi.Request, r *kmsg.MetadataRequest) *kafkaapi.Pending {
			return kafkaapi.Ready(req, h.metadata(c.Listener().Protocol, req, r))
		})
	})
}

// metadata answers a client of listener: every broker is given by its
// endpoint of that listener, and a broker without one is left out, so a
// client is never sent to a port of another security protocol.
//
// With an authorizer, topics the principal may not Describe are left out of
// a full listing and answered TOPIC_AUTHORIZATION_FAILED when named, and a
// topic is auto-created only for a principal that may Create it.
func (h *Handlers) metadata(listener netserver.SecurityProtocol, who *kafkaapi.Request, req *kmsg.MetadataRequest) *kmsg.MetadataResponse {
	resp := kmsg.NewPtrMetadataResponse()
	for _, br := range h.meta.Brokers() {
		host, port, ok := br.Endpoint(string(listener))
		if !ok {
			continue
		}
		rb := kmsg.NewMetadataResponseBroker()
		rb.NodeID, rb.Host, rb.Port = br.ID, host, port
		if br.Rack != "" {
			rb.Rack = &br.Rack
		}
		resp.Brokers = append(resp.Brokers, rb)
	}
	resp.ClusterID = &h.clusterID
	resp.ControllerID = h.self
	if len(resp.Brokers) > 0 {
		resp.ControllerID = resp.Brokers[0].NodeID
	}
	if c, ok := h.meta.(ControllerReader); ok {
		if id, ok := c.Controller(); ok {
			resp.ControllerID = id
		}
	}

	var topics []cluster.Topic
	if req.Topics == nil {
		for _, t := range h.meta.Topics() {
			if h.authz.MayTopic(who.Who, kmsg.ACLOperationDescribe, t.Name) {
				topics = append(topics, t)
			}
		}
	} else {
		autoCreate := req.Version < 4 || req.AllowAutoTopicCreation
		for _, rt := range req.Topics {
			if rt.Topic == nil {
				st := kmsg.NewMetadataResponseTopic()
				st.TopicID = rt.TopicID
				t, ok := h.topicByID(rt.TopicID)
				switch {
				case ok && h.authz.MayTopic(who.Who, kmsg.ACLOperationDescribe, t.Name):
					topics = append(topics, t)
					continue
				case ok:
					// As Kafka: the id is no secret, the name is.
					st.ErrorCode = kerr.TopicAuthorizationFailed.Code
				default:
					st.ErrorCode = kerr.UnknownTopicID.Code
				}
				resp.Topics = append(resp.Topics, st)
				continue
			}
			if !h.authz.MayTopic(who.Who, kmsg.ACLOperationDescribe, *rt.Topic) {
				st := kmsg.NewMetadataResponseTopic()
				st.Topic = rt.Topic
				st.ErrorCode = kerr.TopicAuthorizationFailed.Code
				resp.Topics = append(resp.Topics, st)
				continue
			}
			t, code := h.Lookup(*rt.Topic, autoCreate && h.authz.MayCreateTopic(who.Who, *rt.Topic))
			if code != 0 {
				st := kmsg.NewMetadataResponseTopic()
				st.Topic = rt.Topic
				st.ErrorCode = code
				resp.Topics = append(resp.Topics, st)
				continue
			}
			topics = append(topics, t)
		}
	}
	live := map[int32]bool{}
	for _, br := range resp.Brokers {
		live[br.NodeID] = true
	}
	for _, t := range topics {
		resp.Topics = append(resp.Topics, topicMetadata(t, live))
	}
	return resp
}

// topicMetadata describes t's partitions. A partition whose broker is not
// alive has no leader (LEADER_NOT_AVAILABLE): without replication it is
// offline until that broker comes back with its data.
func topicMetadata(t cluster.Topic, live map[int32]bool) kmsg.MetadataResponseTopic {
	st := kmsg.NewMetadataResponseTopic()
	name := t.Name
	st.Topic = &name
	st.TopicID = t.ID
	st.IsInternal = false
	for p, leader := range t.Leaders {
		if t.Replicated() {
			st.Partitions = append(st.Partitions, replicatedMetadata(t, int32(p), live))
			continue
		}
		sp := kmsg.NewMetadataResponseTopicPartition()
		sp.Partition = int32(p)
		sp.Leader = leader
		sp.Replicas = []int32{leader}
		sp.ISR = []int32{leader}
		if !live[leader] {
			sp.ErrorCode = kerr.LeaderNotAvailable.Code
			sp.Leader = -1
			sp.ISR = []int32{}
			sp.OfflineReplicas = []int32{leader}
		}
		st.Partitions = append(st.Partitions, sp)
	}
	return st
}

// replicatedMetadata describes a replicated partition from its state
// node: its leader and leader epoch, its replicas, the ISR, and the
// replicas whose broker is not alive. Without a live leader the
// partition is LEADER_NOT_AVAILABLE, which clients retry until the
// controller elected one.
func replicatedMetadata(t cluster.Topic, p int32, live map[int32]bool) kmsg.MetadataResponseTopicPartition {
	sp := kmsg.NewMetadataResponseTopicPartition()
	sp.Partition = p
	sp.Replicas = t.ReplicasOf(p)
	sp.OfflineReplicas = []int32{}
	for _, id := range sp.Replicas {
		if !live[id] {
			sp.OfflineReplicas = append(sp.OfflineReplicas, id)
		}
	}
	state, ok := t.StateOf(p)
	sp.Leader, sp.ISR = -1, []int32{}
	if ok {
		sp.LeaderEpoch, sp.ISR = state.LeaderEpoch, state.ISR
		sp.Leader = state.Leader
	}
	if sp.Leader < 0 || !live[sp.Leader] {
		sp.Leader = -1
		sp.ErrorCode = kerr.LeaderNotAvailable.Code
	}
	return sp
}

// Lookup finds a topic, creating it when autoCreate allows (the broker's
// --auto-create-topics, its rate and cap permitting); the error code is
// what the client should see otherwise. It is the one auto-creation
// entry point: Metadata and Produce create through it.
func (h *Handlers) Lookup(name string, autoCreate bool) (cluster.Topic, int16) {
	if t, ok := h.meta.Topic(name); ok {
		return t, 0
	}
	if err := validTopicName(name); err != nil {
		return cluster.Topic{}, kerr.InvalidTopicException.Code
	}
	if !autoCreate || !h.limits.AutoCreate {
		return cluster.Topic{}, kerr.UnknownTopicOrPartition.Code
	}
	if code := h.autoCreateRefusal(name); code != 0 {
		return cluster.Topic{}, code
	}
	if err := h.checkCapacity(name, h.limits.DefaultPartitions); err != nil {
		return h.refuseAutoCreate(name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, configs := internaltopic.AutoCreateShape(name, h.limits.DefaultPartitions)
	t, err := h.CreateReplicated(ctx, name, n, h.limits.DefaultReplicationFactor, configs)
	if cerr := h.capacityError(name, err); cerr != err {
		return h.refuseAutoCreate(name, cerr)
	}
	if errors.Is(err, cluster.ErrTopicExists) {
		if t, ok := h.meta.Topic(name); ok {
			return t, 0
		}
		return cluster.Topic{}, kerr.LeaderNotAvailable.Code
	}
	if err != nil {
		h.logger.Error("auto-creating topic", "topic", name, "err", err)
		return cluster.Topic{}, kerr.LeaderNotAvailable.Code
	}
	h.logger.Info("topic auto-created", "topic", name, "partitions", t.Partitions())
	return t, 0
}

// topicByID finds a topic by its id. Requests by id are rare (admin
// tools), so a scan of the topic list is enough.
func (h *Handlers) topicByID(id [16]byte) (cluster.Topic, bool) {
	if id == ([16]byte{}) {
		return cluster.Topic{}, false
	}
	for _, t := range h.meta.Topics() {
		if t.ID == id {
			return t, true
		}
	}
	return cluster.Topic{}, false
}

// maxMetadataTopics bounds the topics one Metadata request may name.
const maxMetadataTopics = 10000

// CheckMetadataTopics refuses a Metadata request body (after the header)
// naming more than maxMetadataTopics topics, before it is decoded. Topics
// is the body's first field: an int32 count, or a uvarint count+1 from v9.
func CheckMetadataTopics(version int16, body []byte) error {
	var n int64
	if version >= 9 {
		u, w := binary.Uvarint(body)
		if w <= 0 {
			return io.ErrUnexpectedEOF
		}
		n = int64(u) - 1
	} else {
		if len(body) < 4 {
			return io.ErrUnexpectedEOF
		}
		n = int64(int32(binary.BigEndian.Uint32(body)))
	}
	if n > maxMetadataTopics {
		return fmt.Errorf("the Metadata request names %d topics; the limit is %d per request (a null topic list asks for all topics)",
			n, maxMetadataTopics)
	}
	return nil
}
