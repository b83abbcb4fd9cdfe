package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
)

// A follower copies and fsyncs what its leader appended before the
// leader's own fsync covers it (the two fsyncs overlap), yet the high
// watermark waits for the leader's fsync: consumers see nothing, and no
// acks=all write is answered, that the leader could still lose.
func TestFollowerCopiesUnflushedLeaderRecords(t *testing.T) {
	const topic = "unflushed"
	// The leader flushes only when an acks=all write asks it to: its
	// acks=1 records stay unflushed for the hour of flush.ms.
	held := testenv.WithConfig(func(c *broker.Config) {
		replicaTestConfig(c)
		c.Log.IntervalFlush, c.Log.FlushInterval = true, time.Hour
	})
	_, byID, admin := twoReplicas(t, topic, held)
	p := partitionMeta(t, admin, topic)
	leader, follower := byID[p.Leader], byID[3-p.Leader]

	produceTo(t, leader, topic, kgo.LeaderAck(), numbered("unflushed-", 10)...)
	if flushed, end := leader.LogEnds(topic, 0); flushed != 0 || end != 10 {
		t.Fatalf("leader before any flush: flushed end %d, log end %d; want 0 and 10", flushed, end)
	}
	testenv.Eventually(t, 10*time.Second, "the follower fsyncing the leader's unflushed records", func() bool {
		flushed, _ := follower.LogEnds(topic, 0)
		return flushed == 10
	})
	ends, err := admin.ListEndOffsets(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup(topic, 0); o.Err != nil || o.Offset != 0 {
		t.Fatalf("high watermark with the records unflushed on the leader: %+v, want 0", o)
	}

	// An acks=all write makes the leader fsync; the high watermark then
	// covers everything, and consumers read it all.
	produceTo(t, leader, topic, kgo.AllISRAcks(), "flushed")
	got := consumeValues(t, []string{leader.Addr}, topic, 11)
	if got[0] != "unflushed-0" || got[10] != "flushed" {
		t.Fatalf("consumed %q", got)
	}
}
