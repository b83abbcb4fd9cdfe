package topicapi

// CreateTopics. DeleteTopics is in deletetopics.go.
//
// Partitions are spread over the live brokers by the cluster metadata.
// A replication factor above 1 (or -1 with a default above 1) needs a
// cluster (broker/replication); a standalone broker stores each partition once. Configs are checked against the settings Tributary implements
// (broker/topicconfig); an unknown or unsupported one fails the topic with
// INVALID_CONFIG and a message naming it. Manual replica assignments are
// refused. Internal topics (broker/internaltopic) are created only in their
// own shape.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/internaltopic"
	"github.com/tributary-io/tributary/broker/kafkaapi"
	"github.com/tributary-io/tributary/broker/kafkaerr"
	"github.com/tributary-io/tributary/broker/topicconfig"
	"github.com/tributary-io/tributary/cluster"
)

func init() {
	add(19, 0, 7, func(h *Handlers) kafkaapi.Serve { return kafkaapi.Now(h.createTopics) })
}

// maxPartitions caps one topic's partition count: each partition is a
// directory and open files on one broker.
const maxPartitions = 10000

func (h *Handlers) createTopics(who *kafkaapi.Request, req *kmsg.CreateTopicsRequest) *kmsg.CreateTopicsResponse {
	var refused []kmsg.CreateTopicsResponseTopic
	req.Topics, refused = acl.Filter(req.Topics, func(t kmsg.CreateTopicsRequestTopic) bool {
		return h.authz.MayCreateTopic(who.Who, t.Topic)
	}, func(it kmsg.CreateTopicsRequestTopic) kmsg.CreateTopicsResponseTopic {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic, rt.ErrorCode = it.Topic, acl.TopicRefused
		return rt
	})
	resp := kmsg.NewPtrCreateTopicsResponse()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp.Topics = make([]kmsg.CreateTopicsResponseTopic, len(req.Topics))
	named := make(map[string]bool, len(req.Topics))
	var again []int // topics named a second time: after the first, as before
	slots := make(chan struct{}, createConcurrency)
	var wg sync.WaitGroup
	for i, rt := range req.Topics {
		resp.Topics[i] = kmsg.NewCreateTopicsResponseTopic()
		resp.Topics[i].Topic = rt.Topic
		if named[rt.Topic] {
			again = append(again, i)
			continue
		}
		named[rt.Topic] = true
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			h.createOneTopic(ctx, rt, req.ValidateOnly, &resp.Topics[i])
		})
	}
	wg.Wait()
	for _, i := range again {
		h.createOneTopic(ctx, req.Topics[i], req.ValidateOnly, &resp.Topics[i])
	}
	resp.Topics = append(resp.Topics, refused...)
	return resp
}

// createConcurrency bounds the topics of one CreateTopics request created
// at once. One at a time, each topic waited for its own registry write: a
// request for 2,000 topics cost 2,000 rewrites of the standalone registry
// (each fsynced, each a bigger file) or 2,000 ZooKeeper round trips in
// turn. Created together, the standalone registry's group commit covers
// many with one write, and ZooKeeper requests share the connection's
// pipeline.
const createConcurrency = 64

// createOneTopic creates rt and fills its answer st.
func (h *Handlers) createOneTopic(ctx context.Context, rt kmsg.CreateTopicsRequestTopic, validateOnly bool, st *kmsg.CreateTopicsResponseTopic) {
	t, err := h.createTopic(ctx, rt, validateOnly)
	if err != nil {
		st.ErrorCode = kafkaerr.Code(err)
		msg := err.Error()
		st.ErrorMessage = &msg
		return
	}
	st.NumPartitions = t.Partitions()
	st.ReplicationFactor = int16(len(t.ReplicasOf(0)))
	st.TopicID = t.ID
	st.Configs = h.createdTopicConfigs(t)
}

// createdTopicConfigs reports a new topic's effective configs (v5+). Java's
// Admin client reads the list without a null check, so it is always sent,
// empty at worst.
func (h *Handlers) createdTopicConfigs(t cluster.Topic) []kmsg.CreateTopicsResponseTopicConfig {
	entries, err := h.configs(t.Configs)
	if err != nil {
		h.logger.Error("describing the configs of a created topic", "topic", t.Name, "err", err)
	}
	out := make([]kmsg.CreateTopicsResponseTopicConfig, 0, len(entries))
	for _, e := range entries {
		c := kmsg.NewCreateTopicsResponseTopicConfig()
		v := e.Value
		c.Name, c.Value, c.Source = e.Name, &v, int8(e.Source)
		out = append(out, c)
	}
	return out
}

func (h *Handlers) createTopic(ctx context.Context, rt kmsg.CreateTopicsRequestTopic, validateOnly bool) (cluster.Topic, error) {
	if err := validTopicName(rt.Topic); err != nil {
		return cluster.Topic{}, kafkaerr.New(kerr.InvalidTopicException, "%v", err)
	}
	if len(rt.ReplicaAssignment) > 0 {
		return cluster.Topic{}, kafkaerr.New(kerr.InvalidReplicaAssignment, "manual replica assignment is not supported: Tributary places partitions itself")
	}
	n := rt.NumPartitions
	if n == -1 {
		n = h.limits.DefaultPartitions
	}
	if n <= 0 || n > maxPartitions {
		return cluster.Topic{}, kafkaerr.New(kerr.InvalidPartitions, "number of partitions must be between 1 and %d, got %d", maxPartitions, rt.NumPartitions)
	}
	rf, err := h.replicationFactor(rt.ReplicationFactor)
	if err != nil {
		return cluster.Topic{}, err
	}
	configs := map[string]string{}
	for _, c := range rt.Configs {
		if c.Value == nil {
			continue
		}
		configs[c.Name] = *c.Value
	}
	if err := topicconfig.Check(configs); err != nil {
		return cluster.Topic{}, kafkaerr.New(kerr.InvalidConfig, "%v", err)
	}
	if err := h.check(configs, rf); err != nil {
		return cluster.Topic{}, err
	}
	if len(configs) == 0 {
		configs = nil
	}
	configs, err = internaltopic.Shape(rt.Topic, n, configs)
	if err != nil {
		return cluster.Topic{}, err
	}
	if _, ok := h.meta.Topic(rt.Topic); ok {
		return cluster.Topic{}, kafkaerr.New(kerr.TopicAlreadyExists, "topic %q already exists", rt.Topic)
	}
	if err := h.checkCapacity(rt.Topic, n); err != nil {
		return cluster.Topic{}, err
	}
	if validateOnly {
		replicas := make([][]int32, n)
		for p := range replicas {
			replicas[p] = make([]int32, rf)
		}
		return cluster.Topic{Name: rt.Topic, Leaders: make([]int32, n), Replicas: replicas, Configs: configs}, nil
	}
	t, err := h.CreateReplicated(ctx, rt.Topic, n, rf, configs)
	if cerr := h.capacityError(rt.Topic, err); cerr != err {
		h.logger.Warn("topic creation refused", "topic", rt.Topic, "err", cerr)
		return t, cerr
	}
	switch {
	case errors.Is(err, cluster.ErrTopicExists):
		return t, kafkaerr.New(kerr.TopicAlreadyExists, "topic %q already exists", rt.Topic)
	case err != nil:
		h.logger.Error("creating topic", "topic", rt.Topic, "err", err)
		return t, kafkaerr.New(kerr.UnknownServerError, "creating topic %q: %v", rt.Topic, err)
	}
	h.logger.Info("topic created", "topic", t.Name, "partitions", n, "configs", configs)
	return t, nil
}

// validTopicName applies Kafka's rules, so that a name valid here is valid
// for every Kafka tool, and a partition directory name cannot escape the
// data directory.
func validTopicName(name string) error {
	switch {
	case name == "":
		return errors.New("topic name is empty")
	case name == "." || name == "..":
		return fmt.Errorf("topic name %q is not allowed", name)
	case len(name) > 249:
		return fmt.Errorf("topic name is %d characters long, the limit is 249", len(name))
	}
	if i := strings.IndexFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-')
	}); i >= 0 {
		return fmt.Errorf("topic name %q contains %q: only ASCII letters, digits, '.', '_' and '-' are allowed", name, name[i])
	}
	return nil
}
