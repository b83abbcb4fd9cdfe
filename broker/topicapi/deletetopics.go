package topicapi

// DeleteTopics.
//
// Deleting a topic removes it from the cluster metadata, then closes and
// removes its partitions' files and, before answering, every group's
// committed offsets of it (a topic created again under the name must not
// be read from the old positions). Internal topics (broker/internaltopic) are
// deleted only by the client ids admitted to them.

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/internaltopic"
	"github.com/tributary-io/tributary/broker/kafkaapi"
	"github.com/tributary-io/tributary/cluster"
)

func init() {
	add(20, 0, 6, func(h *Handlers) kafkaapi.Serve { return kafkaapi.Now(h.deleteTopics) })
}

// deleteRefusal says why the client of req may not delete topic, or "" when
// it may. With an authorizer the ACLs decide (Delete on the topic), internal
// topics included; without one, the internal topics' client-id rule.
func (h *Handlers) deleteRefusal(req *kafkaapi.Request, topic string) string {
	if h.authz != nil {
		return h.authz.TopicRefusal(req.Who, kmsg.ACLOperationDelete, "delete", topic)
	}
	return internaltopic.Refusal(h.internal, req.ClientID, topic, "delete")
}

func (h *Handlers) deleteTopics(who *kafkaapi.Request, req *kmsg.DeleteTopicsRequest) *kmsg.DeleteTopicsResponse {
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
		if refusal := h.deleteRefusal(who, name); refusal != "" {
			st.ErrorCode = kerr.TopicAuthorizationFailed.Code
			st.ErrorMessage = &refusal
			resp.Topics = append(resp.Topics, st)
			continue
		}
		switch err := h.meta.DeleteTopic(ctx, name); {
		case errors.Is(err, cluster.ErrUnknownTopic):
			st.ErrorCode = kerr.UnknownTopicOrPartition.Code
		case err != nil:
			h.logger.Error("deleting topic", "topic", name, "err", err)
			st.ErrorCode = kerr.UnknownServerError.Code
			msg := err.Error()
			st.ErrorMessage = &msg
		default:
			h.deleted(name)
			h.logger.Info("topic deleted", "topic", name)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
