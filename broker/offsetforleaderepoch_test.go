package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
)

// OffsetForLeaderEpoch answers from the leader's epoch cache: its current
// epoch ends at the log end, an epoch above it is unknown (-1, -1), and
// a requester whose current leader epoch differs from the leader's is
// fenced (older) or told the epoch is unknown (newer).
func TestOffsetForLeaderEpoch(t *testing.T) {
	const topic = "epochs"
	dir := t.TempDir()
	b := testenv.StartBroker(t, testenv.WithDataDir(dir), testenv.WithMetadata(newLeaderOf(dir, topic)),
		testenv.WithConfig(func(c *broker.Config) { c.ReplicaLagMax = time.Hour }))
	cl := newClient(t, b.Addr, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	for range 3 {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		current, epoch int32
		code           error
		gotEpoch       int32
		end            int64
	}{
		{-1, 0, nil, 0, 3},
		{0, 0, nil, 0, 3},
		{-1, 5, nil, -1, -1},
		{1, 0, kerr.UnknownLeaderEpoch, -1, -1},
	} {
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.ReplicaID = -1
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.CurrentLeaderEpoch, rp.LeaderEpoch = c.current, c.epoch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(context.Background(), cl.Broker(1))
		if err != nil {
			t.Fatal(err)
		}
		sp := resp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(sp.ErrorCode); err != c.code || sp.LeaderEpoch != c.gotEpoch || sp.EndOffset != c.end {
			t.Errorf("current %d, epoch %d: (%v, %d, %d), want (%v, %d, %d)",
				c.current, c.epoch, err, sp.LeaderEpoch, sp.EndOffset, c.code, c.gotEpoch, c.end)
		}
	}
}
