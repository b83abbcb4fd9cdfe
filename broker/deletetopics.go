package broker

// DeleteTopics.
//
// Deleting a topic removes it from the cluster metadata, then closes and
// removes its partitions' files and, before answering, every group's
// committed offsets of it (a topic created again under the name must not
// be read from the old positions). Internal topics (internal_topics.go) are
// deleted only by the client ids admitted to them.

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/cluster"
)

func init() {
	register(20, 0, 6, func(b *Broker, _ *conn, req *request) *pending {
		return ready(encode(req, b.deleteTopics(req, req.Request.(*kmsg.DeleteTopicsRequest))))
	})
}

// deleteRefusal says why the client of req may not delete topic, or "" when
// it may. With an authorizer the ACLs decide (Delete on the topic), internal
// topics included; without one, the internal topics' client-id rule.
func (b *Broker) deleteRefusal(req *request, topic string) string {
	if b.authz != nil {
		return b.topicRefusal(req, kmsg.ACLOperationDelete, "delete", topic)
	}
	return b.internalRefusal(req.clientID, topic, "delete")
}

func (b *Broker) deleteTopics(who *request, req *kmsg.DeleteTopicsRequest) *kmsg.DeleteTopicsResponse {
	resp := kmsg.NewPtrDeleteTopicsResponse()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	names := req.TopicNames
	for _, t := range req.Topics {
		if t.Topic != nil {
			names = append(names, *t.Topic)
		}
	}
	for _, name := range names {
		st := kmsg.NewDeleteTopicsResponseTopic()
		n := name
		st.Topic = &n
		if refusal := b.deleteRefusal(who, name); refusal != "" {
			st.ErrorCode = kerr.TopicAuthorizationFailed.Code
			st.ErrorMessage = &refusal
			resp.Topics = append(resp.Topics, st)
			continue
		}
		switch err := b.meta.DeleteTopic(ctx, name); {
		case errors.Is(err, cluster.ErrUnknownTopic):
			st.ErrorCode = kerr.UnknownTopicOrPartition.Code
		case err != nil:
			b.logger.Error("deleting topic", "topic", name, "err", err)
			st.ErrorCode = kerr.UnknownServerError.Code
			msg := err.Error()
			st.ErrorMessage = &msg
		default:
			b.logs.DeleteTopic(name)
			b.forgetTopicOffsets(name)
			b.logger.Info("topic deleted", "topic", name)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// forgetTopicOffsets drops every group's committed offsets of a deleted
// topic. The topic is gone whatever happens here, so a failure is logged
// with what the operator can do rather than answered.
func (b *Broker) forgetTopicOffsets(topic string) {
	n, err := b.groups.ForgetTopic(topic)
	if err != nil {
		b.logger.Error("deleted topic: some groups' committed offsets of it remain; a topic created again under its name would be read from them until they are deleted (kafka-consumer-groups --delete-offsets)",
			"topic", topic, "groups_cleared", n, "err", err)
		return
	}
	if n > 0 {
		b.logger.Info("deleted topic: committed offsets dropped", "topic", topic, "groups", n)
	}
}
