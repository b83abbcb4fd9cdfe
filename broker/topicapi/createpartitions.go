package topicapi

// CreatePartitions.
//
// Grows a topic to the requested count. Existing partitions stay where
// their data is; the new ones are placed over the brokers alive now,
// continuing the topic's round-robin (cluster.Spread). Growing changes
// which partition a key hashes to, as in Kafka. Manual assignments are
// refused (INVALID_REPLICA_ASSIGNMENT), as in CreateTopics; a count that
// does not grow the topic or passes the cap gets INVALID_PARTITIONS.
// validate_only checks without changing anything.

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/acl"
	"github.com/tributary-io/tributary/broker/kafkaapi"
	"github.com/tributary-io/tributary/broker/kafkaerr"
	"github.com/tributary-io/tributary/cluster"
)

func init() {
	add(37, 0, 3, func(h *Handlers) kafkaapi.Serve { return kafkaapi.Async(h.createPartitions) })
}

func (h *Handlers) createPartitions(who *kafkaapi.Request, req *kmsg.CreatePartitionsRequest) *kmsg.CreatePartitionsResponse {
	var refused []kmsg.CreatePartitionsResponseTopic
	req.Topics, refused = acl.Filter(req.Topics, func(t kmsg.CreatePartitionsRequestTopic) bool {
		return h.authz.MayTopic(who.Who, kmsg.ACLOperationAlter, t.Topic)
	}, func(it kmsg.CreatePartitionsRequestTopic) kmsg.CreatePartitionsResponseTopic {
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic, rt.ErrorCode = it.Topic, acl.TopicRefused
		return rt
	})
	resp := kmsg.NewPtrCreatePartitionsResponse()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, rt := range req.Topics {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		if err := h.growTopic(ctx, rt, req.ValidateOnly); err != nil {
			st.ErrorCode = kafkaerr.Code(err)
			msg := err.Error()
			st.ErrorMessage = &msg
		}
		resp.Topics = append(resp.Topics, st)
	}
	resp.Topics = append(resp.Topics, refused...)
	return resp
}

func (h *Handlers) growTopic(ctx context.Context, rt kmsg.CreatePartitionsRequestTopic, validateOnly bool) error {
	t, ok := h.meta.Topic(rt.Topic)
	switch {
	case !ok:
		return kafkaerr.New(kerr.UnknownTopicOrPartition, "topic %q does not exist", rt.Topic)
	case rt.Assignment != nil:
		return kafkaerr.New(kerr.InvalidReplicaAssignment, "manual replica assignment is not supported: Tributary places partitions itself")
	case rt.Count <= t.Partitions():
		return kafkaerr.New(kerr.InvalidPartitions, "topic %s has %d partitions; a topic can only grow, asked for %d", rt.Topic, t.Partitions(), rt.Count)
	case rt.Count > maxPartitions:
		return kafkaerr.New(kerr.InvalidPartitions, "number of partitions must be at most %d, got %d", maxPartitions, rt.Count)
	case validateOnly:
		return nil
	}
	t, err := h.meta.AddPartitions(ctx, rt.Topic, rt.Count)
	switch {
	case errors.Is(err, cluster.ErrUnknownTopic):
		return kafkaerr.New(kerr.UnknownTopicOrPartition, "topic %q does not exist", rt.Topic)
	case errors.Is(err, cluster.ErrPartitionCount):
		return kafkaerr.New(kerr.InvalidPartitions, "%v", err)
	case errors.Is(err, cluster.ErrNoBrokers):
		return kafkaerr.New(kerr.BrokerNotAvailable, "%v", err)
	case err != nil:
		h.logger.Error("adding partitions", "topic", rt.Topic, "err", err)
		return kafkaerr.New(kerr.UnknownServerError, "adding partitions to %s: %v", rt.Topic, err)
	}
	h.logger.Info("partitions added", "topic", t.Name, "partitions", t.Partitions())
	return nil
}
