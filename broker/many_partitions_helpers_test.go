package broker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// createNumberedTopics creates topics prefix-000, prefix-001, ... of parts
// partitions each (one replica) on the broker at addr, and returns their
// names.
func createNumberedTopics(t *testing.T, addr, prefix string, topics, parts int) []string {
	t.Helper()
	names := make([]string, topics)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}
	resp, err := kadm.NewClient(newClient(t, addr)).CreateTopics(context.Background(), int32(parts), 1, nil, names...)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// onePerPartition is a record holding value for each of the parts
// partitions of every topic in names, for a client with kgo's
// ManualPartitioner.
func onePerPartition(names []string, parts int, value []byte) []*kgo.Record {
	recs := make([]*kgo.Record, 0, len(names)*parts)
	for _, n := range names {
		for p := range int32(parts) {
			recs = append(recs, &kgo.Record{Topic: n, Partition: p, Value: value})
		}
	}
	return recs
}

// manualPartitionClient is a producer for onePerPartition's records that
// lingers 5 ms, so that they go out in as few requests as kgo makes.
func manualPartitionClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return newClient(t, addr, append([]kgo.Opt{kgo.ProducerLinger(5 * time.Millisecond), kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)...)
}
