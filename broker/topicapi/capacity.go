package topicapi

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/kafkaerr"
	"github.com/tributary-io/tributary/cluster"
)

// How many topics and partitions a broker takes is capped (--max-topics,
// --max-partitions): every partition is a directory, descriptors when open,
// and a line in the metadata every client reads, so an unbounded
// auto-create storm would end in a broker that cannot start. A creation
// beyond a cap is refused with POLICY_VIOLATION and a message naming the
// setting; nothing existing is affected.
//
// Standalone metadata checks the caps in the same step as the create, so
// concurrent creators cannot overshoot. In a cluster the broker handling
// the request checks against the shared view first (a race between
// brokers may overshoot by the creations in flight).

// checkCapacity refuses a new topic of n partitions that would pass a cap,
// for metadata that does not check the caps itself.
func (h *Handlers) checkCapacity(name string, n int32) error {
	if h.limits.MetadataChecksCaps {
		return nil
	}
	topics := h.meta.Topics()
	if h.limits.MaxTopics > 0 && len(topics)+1 > h.limits.MaxTopics {
		return kafkaerr.New(kerr.PolicyViolation, "creating topic %q: the cluster has %d topics: raise --max-topics (now %d) or delete unused topics", name, len(topics), h.limits.MaxTopics)
	}
	if h.limits.MaxPartitions <= 0 {
		return nil
	}
	hosted := 0
	for _, t := range topics {
		for _, leader := range t.Leaders {
			if leader == h.self {
				hosted++
			}
		}
	}
	leaders, err := cluster.Spread(name, n, h.meta.Brokers())
	if err != nil {
		return nil // the create itself reports it
	}
	more := 0
	for _, leader := range leaders {
		if leader == h.self {
			more++
		}
	}
	if hosted+more > h.limits.MaxPartitions {
		return kafkaerr.New(kerr.PolicyViolation, "creating topic %q: this broker hosts %d partitions and %d more would pass the limit: raise --max-partitions (now %d) or delete unused topics", name, hosted, more, h.limits.MaxPartitions)
	}
	return nil
}

// capacityError turns the standalone metadata's refusals into the same
// answer checkCapacity gives; other errors are returned unchanged.
func (h *Handlers) capacityError(name string, err error) error {
	switch {
	case errors.Is(err, cluster.ErrTooManyTopics):
		return kafkaerr.New(kerr.PolicyViolation, "creating topic %q: %v: raise --max-topics (now %d) or delete unused topics", name, err, h.limits.MaxTopics)
	case errors.Is(err, cluster.ErrTooManyPartitions):
		return kafkaerr.New(kerr.PolicyViolation, "creating topic %q: %v: raise --max-partitions (now %d) or delete unused topics", name, err, h.limits.MaxPartitions)
	}
	return err
}

// refuseAutoCreate answers an auto-creation beyond a cap. Metadata carries
// no error message, so the log line is where the operator learns which
// setting to raise.
func (h *Handlers) refuseAutoCreate(name string, err error) (cluster.Topic, int16) {
	h.logger.Warn("topic auto-creation refused", "topic", name, "err", err)
	return cluster.Topic{}, kerr.PolicyViolation.Code
}
