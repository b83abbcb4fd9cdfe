package kafkaerr

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/cluster"
)

// TestCodes: an error keeps its code through wrapping, any other error is
// UNKNOWN_SERVER_ERROR, and the storage engine's errors map to the codes a
// client acts on.
func TestCodes(t *testing.T) {
	err := New(kerr.InvalidConfig, "config %s=%d", "segment.ms", 1)
	if err.Error() != "config segment.ms=1" || Code(err) != kerr.InvalidConfig.Code {
		t.Errorf("New: %q code %d", err, Code(err))
	}
	if Code(fmt.Errorf("altering: %w", err)) != kerr.InvalidConfig.Code {
		t.Error("a wrapped error lost its code")
	}
	if Code(errors.New("disk on fire")) != kerr.UnknownServerError.Code {
		t.Error("an error without a code is not UNKNOWN_SERVER_ERROR")
	}
	for _, c := range []struct {
		err  error
		want *kerr.Error
	}{
		{fmt.Errorf("segment 0: %w", log.ErrCorruptBatch), kerr.CorruptMessage},
		{log.ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber},
		{context.Canceled, kerr.NotLeaderForPartition},
		{errors.New("no space left on device"), kerr.KafkaStorageError},
	} {
		if got := OfStorage(c.err); got != c.want.Code {
			t.Errorf("%v: code %d, want %s", c.err, got, c.want.Message)
		}
	}
}

// TestClusterCodes: the cluster metadata's refusals keep their codes
// through wrapping; what the table does not know is UNKNOWN_SERVER_ERROR.
func TestClusterCodes(t *testing.T) {
	for _, c := range []struct {
		err  error
		want *kerr.Error
	}{
		{fmt.Errorf("topic t: %w", cluster.ErrUnknownTopic), kerr.UnknownTopicOrPartition},
		{cluster.ErrInvalidReplicas, kerr.InvalidReplicaAssignment},
		{cluster.ErrNotReplicated, kerr.InvalidReplicaAssignment},
		{cluster.ErrNoReassignment, kerr.NoReassignmentInProgress},
		{cluster.ErrElectionNotNeeded, kerr.ElectionNotNeeded},
		{cluster.ErrPreferredNotAvailable, kerr.PreferredLeaderNotAvailable},
		{cluster.ErrEligibleNotAvailable, kerr.EligibleLeadersNotAvailable},
		{cluster.ErrTopicExists, kerr.TopicAlreadyExists},
		{cluster.ErrPartitionCount, kerr.InvalidPartitions},
		{cluster.ErrNoBrokers, kerr.BrokerNotAvailable},
		{cluster.ErrTooManyTopics, kerr.PolicyViolation},
		{context.DeadlineExceeded, kerr.RequestTimedOut},
		{errors.New("zookeeper: connection closed"), kerr.UnknownServerError},
	} {
		if got := OfCluster(c.err); got != c.want.Code {
			t.Errorf("%v: code %d, want %s", c.err, got, c.want.Message)
		}
	}
}
