package brokertest

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/broker/group"
	"github.com/tributary-io/tributary/internal/testenv"
)

// FastGroups keeps group tests fast: short session timeouts are allowed,
// new groups wait only briefly for more members, deadlines are checked
// often.
func FastGroups(c *broker.Config) {
	c.Groups = group.Config{
		MinSessionTimeout:     100 * time.Millisecond,
		InitialRebalanceDelay: 300 * time.Millisecond,
		Tick:                  20 * time.Millisecond,
	}
}

// ConsumerGroups is FastGroups with short consumer-protocol (KIP-848)
// timings.
func ConsumerGroups(c *broker.Config) {
	FastGroups(c)
	c.Groups.ConsumerHeartbeatInterval = 200 * time.Millisecond
	c.Groups.ConsumerSessionTimeout = 3 * time.Second
}

// StartGroupBroker starts an in-process broker with FastGroups.
func StartGroupBroker(t testing.TB, opts ...testenv.BrokerOption) *testenv.Broker {
	t.Helper()
	return testenv.StartBroker(t, append([]testenv.BrokerOption{testenv.WithConfig(FastGroups)}, opts...)...)
}

// Committed reads a group's committed offsets through the Kafka protocol.
func Committed(t testing.TB, addr, groupName string) kadm.OffsetResponses {
	t.Helper()
	adm := kadm.NewClient(NewClient(t, addr))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := adm.FetchOffsets(ctx, groupName)
	if err != nil {
		t.Fatalf("fetching offsets of %s: %v", groupName, err)
	}
	if err := resp.Error(); err != nil {
		t.Fatalf("fetching offsets of %s: %v", groupName, err)
	}
	return resp
}

// CommitOffsets commits a group's offsets of topic's partitions, as a
// member would.
func CommitOffsets(t testing.TB, addr, groupName string, topic string, offsets map[int32]int64) {
	t.Helper()
	adm := kadm.NewClient(NewClient(t, addr))
	var os kadm.Offsets
	for p, o := range offsets {
		os.Add(kadm.Offset{Topic: topic, Partition: p, At: o, LeaderEpoch: -1})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := adm.CommitOffsets(ctx, groupName, os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("committing offsets of %s: %v", groupName, err)
	}
}

// WantOffsets fails the test unless got holds want's offset for each of
// topic's partitions it names.
func WantOffsets(t testing.TB, got kadm.OffsetResponses, topic string, want map[int32]int64) {
	t.Helper()
	for p, o := range want {
		if r, ok := got.Lookup(topic, p); !ok || r.At != o {
			t.Errorf("%s/%d committed at %v, want %d", topic, p, r.At, o)
		}
	}
}
