package kafkaerr

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/cluster"
)

// OfCluster maps the cluster metadata's refusals (package cluster's
// sentinel errors, wrapped or not) to Kafka error codes, so that every
// handler answers a missing topic, a bad assignment or an election that
// cannot happen alike; any other error is UNKNOWN_SERVER_ERROR.
// ErrNotReplicated is INVALID_REPLICA_ASSIGNMENT: a partition with one
// replica cannot be moved (ElectLeaders reads it as "no election needed").
func OfCluster(err error) int16 {
	switch {
	case errors.Is(err, cluster.ErrUnknownTopic):
		return kerr.UnknownTopicOrPartition.Code
	case errors.Is(err, cluster.ErrTopicExists):
		return kerr.TopicAlreadyExists.Code
	case errors.Is(err, cluster.ErrPartitionCount):
		return kerr.InvalidPartitions.Code
	case errors.Is(err, cluster.ErrNoBrokers):
		return kerr.BrokerNotAvailable.Code
	case errors.Is(err, cluster.ErrTooManyTopics), errors.Is(err, cluster.ErrTooManyPartitions):
		return kerr.PolicyViolation.Code
	case errors.Is(err, cluster.ErrInvalidReplicas), errors.Is(err, cluster.ErrNotReplicated):
		return kerr.InvalidReplicaAssignment.Code
	case errors.Is(err, cluster.ErrNoReassignment):
		return kerr.NoReassignmentInProgress.Code
	case errors.Is(err, cluster.ErrElectionNotNeeded):
		return kerr.ElectionNotNeeded.Code
	case errors.Is(err, cluster.ErrPreferredNotAvailable):
		return kerr.PreferredLeaderNotAvailable.Code
	case errors.Is(err, cluster.ErrEligibleNotAvailable):
		return kerr.EligibleLeadersNotAvailable.Code
	case errors.Is(err, context.DeadlineExceeded):
		return kerr.RequestTimedOut.Code
	}
	return kerr.UnknownServerError.Code
}
