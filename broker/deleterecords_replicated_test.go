package broker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testenv"
)

// DeleteRecords on a replicated partition stops at the replicated high
// watermark, what every in-sync replica holds, not at the leader's own
// flushed end: records its followers have not copied yet, which no
// consumer has seen, stay (and an offset past the high watermark is
// OFFSET_OUT_OF_RANGE, as in Kafka).
func TestDeleteRecordsStopsAtTheReplicatedHighWatermark(t *testing.T) {
	const topic = "purged"
	_, brokers, admin := replicatedCluster(t, topic)
	p := partitionMeta(t, admin, topic)
	leader := brokers[p.Leader-1]
	var resumes []func()
	for _, id := range p.Replicas {
		if id != p.Leader {
			resumes = append(resumes, brokers[id-1].PauseReplication())
		}
	}
	resumeAll := func() {
		for _, r := range resumes {
			r()
		}
	}
	defer resumeAll()
	cl, err := kgo.NewClient(kgo.SeedBrokers(leader.Addr), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	for i := range 10 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, 20*time.Second, "the leader's log flushed to 10", func() bool {
		flushed, _ := leader.LogEnds(topic, 0)
		return flushed >= 10
	})

	purge := func(at int64) kadm.DeleteRecordsResponse {
		t.Helper()
		offs := kadm.Offsets{}
		offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: at, LeaderEpoch: -1})
		resps, err := admin.DeleteRecords(ctx, offs)
		if err != nil {
			t.Fatal(err)
		}
		r, _ := resps.Lookup(topic, 0)
		return r
	}
	if r := purge(-1); r.Err != nil || r.LowWatermark != 0 {
		t.Fatalf("DeleteRecords(-1) with followers holding nothing: low watermark %d, %v; want 0 (the replicated high watermark)", r.LowWatermark, r.Err)
	}
	if r := purge(5); !errors.Is(r.Err, kerr.OffsetOutOfRange) {
		t.Fatalf("DeleteRecords(5) above the replicated high watermark: low watermark %d, %v; want OFFSET_OUT_OF_RANGE", r.LowWatermark, r.Err)
	}

	resumeAll()
	testenv.Eventually(t, 30*time.Second, "the followers caught up", func() bool {
		ends, err := admin.ListEndOffsets(ctx, topic)
		if err != nil {
			return false
		}
		end, _ := ends.Lookup(topic, 0)
		return end.Err == nil && end.Offset == 10
	})
	if r := purge(-1); r.Err != nil || r.LowWatermark != 10 {
		t.Fatalf("DeleteRecords(-1) once replicated: low watermark %d, %v; want 10", r.LowWatermark, r.Err)
	}
}
