package broker_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
)

func TestCreatePartitionsStandalone(t *testing.T) {
	b := testenv.StartBroker(t)
	adm, _ := newAdmin(t, b.Addr)
	ctx := context.Background()
	createTopic(t, b.Addr, "grow", 2, nil)
	rs, err := adm.UpdatePartitions(ctx, 5, "grow")
	if err != nil || rs["grow"].Err != nil {
		t.Fatalf("growing to 5: %v %v", err, rs["grow"].Err)
	}
	td, _ := adm.ListTopics(ctx, "grow")
	if n := len(td["grow"].Partitions); n != 5 {
		t.Fatalf("%d partitions after growing, want 5", n)
	}
	produceSized(t, b.Addr, "grow", 4, 1, nil)
	rs, _ = adm.UpdatePartitions(ctx, 3, "grow")
	if !errors.Is(rs["grow"].Err, kerr.InvalidPartitions) {
		t.Errorf("shrinking: %v, want INVALID_PARTITIONS", rs["grow"].Err)
	}
	rs, _ = adm.UpdatePartitions(ctx, 2, "no-such-topic")
	if !errors.Is(rs["no-such-topic"].Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("unknown topic: %v", rs["no-such-topic"].Err)
	}
}

func TestCreatePartitionsCluster(t *testing.T) {
	_, brokers := testenv.StartCluster(t, 2)
	adm, _ := newAdmin(t, brokers[0].Addr)
	ctx := context.Background()
	if r, err := adm.CreateTopic(ctx, 1, 1, nil, "cl-grow"); err != nil || r.Err != nil {
		t.Fatal(err, r.Err)
	}
	if rs, err := adm.UpdatePartitions(ctx, 4, "cl-grow"); err != nil || rs["cl-grow"].Err != nil {
		t.Fatalf("growing: %v %v", err, rs["cl-grow"].Err)
	}
	adm2, _ := newAdmin(t, brokers[1].Addr)
	leaders := map[int32]bool{}
	testenv.Eventually(t, 10*time.Second, "the other broker sees 4 partitions", func() bool {
		td, err := adm2.ListTopics(ctx, "cl-grow")
		if err != nil || len(td["cl-grow"].Partitions) != 4 {
			return false
		}
		for _, p := range td["cl-grow"].Partitions {
			leaders[p.Leader] = true
		}
		return true
	})
	if !leaders[1] || !leaders[2] {
		t.Errorf("new partitions not spread over both brokers: leaders %v", leaders)
	}
	// Every partition takes writes on its broker.
	cl := newClient(t, brokers[0].Addr, kgo.DefaultProduceTopic("cl-grow"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := range int32(4) {
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte("x")}).FirstErr(); err != nil {
			t.Errorf("partition %d: %v", p, err)
		}
	}
}

func TestDeleteRecords(t *testing.T) {
	b := testenv.StartBroker(t, testenv.WithConfig(func(c *broker.Config) { c.Log.SegmentBytes = 1024 }))
	adm, _ := newAdmin(t, b.Addr)
	ctx := context.Background()
	createTopic(t, b.Addr, "trim", 1, nil)
	produceSized(t, b.Addr, "trim", 0, 10, nil)
	before, _ := filepath.Glob(filepath.Join(b.DataDir, "trim-0", "*.log"))

	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: "trim", Partition: 0, At: 7})
	rs, err := adm.DeleteRecords(ctx, os)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := rs.Lookup("trim", 0)
	if r.Err != nil || r.LowWatermark != 7 {
		t.Fatalf("DeleteRecords: %+v", r)
	}
	after, _ := filepath.Glob(filepath.Join(b.DataDir, "trim-0", "*.log"))
	if len(after) >= len(before) {
		t.Errorf("%d segments before, %d after: whole segments below the start should go", len(before), len(after))
	}
	starts, err := adm.ListStartOffsets(ctx, "trim")
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := starts.Lookup("trim", 0); s.Offset != 7 {
		t.Errorf("start offset %d, want 7", s.Offset)
	}
	if got := consumeAll(t, b.Addr, "trim", 3)[0]; got[0].Offset != 7 {
		t.Errorf("a consumer from the start reads offset %d first, want 7", got[0].Offset)
	}
	os = nil
	os.Add(kadm.Offset{Topic: "trim", Partition: 0, At: 100})
	rs, _ = adm.DeleteRecords(ctx, os)
	if r, _ := rs.Lookup("trim", 0); !errors.Is(r.Err, kerr.OffsetOutOfRange) {
		t.Errorf("past the high watermark: %v, want OFFSET_OUT_OF_RANGE", r.Err)
	}
}

func TestOffsetDelete(t *testing.T) {
	b := testenv.StartBroker(t)
	adm, _ := newAdmin(t, b.Addr)
	ctx := context.Background()
	createTopic(t, b.Addr, "od", 2, nil)
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: "od", Partition: 0, At: 3})
	os.Add(kadm.Offset{Topic: "od", Partition: 1, At: 5})
	if _, err := adm.CommitOffsets(ctx, "od-app", os); err != nil {
		t.Fatal(err)
	}
	rs, err := adm.DeleteOffsets(ctx, "od-app", kadm.TopicsSet{"od": {0: {}}})
	if err != nil || rs.Error() != nil {
		t.Fatalf("DeleteOffsets: %v %v", err, rs.Error())
	}
	fetched, err := adm.FetchOffsets(ctx, "od-app")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := fetched.Lookup("od", 0); ok {
		t.Error("partition 0's offset is still committed")
	}
	if o, ok := fetched.Lookup("od", 1); !ok || o.At != 5 {
		t.Errorf("partition 1's offset: %+v, want 5 kept", o)
	}
	_, err = adm.DeleteOffsets(ctx, "no-such-group", kadm.TopicsSet{"od": {0: {}}})
	if !errors.Is(err, kerr.GroupIDNotFound) {
		t.Errorf("unknown group: %v, want GROUP_ID_NOT_FOUND", err)
	}

	// A live member's topic is refused.
	cl := newClient(t, b.Addr, kgo.ConsumerGroup("od-app"), kgo.ConsumeTopics("od"))
	testenv.Eventually(t, 20*time.Second, "the consumer joins", func() bool {
		cl.PollFetches(shortCtx(t))
		d, err := adm.DescribeGroups(ctx, "od-app")
		return err == nil && d["od-app"].State == "Stable"
	})
	rs, err = adm.DeleteOffsets(ctx, "od-app", kadm.TopicsSet{"od": {1: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := rs.Lookup("od", 1); !errors.Is(e, kerr.GroupSubscribedToTopic) {
		t.Errorf("deleting a consumed topic's offset: %v, want GROUP_SUBSCRIBED_TO_TOPIC", e)
	}
}

func shortCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	t.Cleanup(cancel)
	return ctx
}

func TestDescribeLogDirs(t *testing.T) {
	b := testenv.StartBroker(t)
	adm, _ := newAdmin(t, b.Addr)
	ctx := context.Background()
	createTopic(t, b.Addr, "sized", 2, nil)
	produceSized(t, b.Addr, "sized", 1, 3, nil)
	dirs, err := adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	dirs.Each(func(d kadm.DescribedLogDir) {
		if d.Err != nil {
			t.Errorf("dir %s: %v", d.Dir, d.Err)
		}
		if d.TotalBytes <= 0 || d.UsableBytes <= 0 {
			t.Errorf("dir %s: total %d usable %d bytes", d.Dir, d.TotalBytes, d.UsableBytes)
		}
		if p, ok := d.Topics["sized"][1]; ok {
			found = true
			if p.Size < 900 {
				t.Errorf("partition 1 holds three 300-byte records but reports %d bytes", p.Size)
			}
		}
		if p, ok := d.Topics["sized"][0]; ok && p.Size != 0 {
			t.Errorf("empty partition 0 reports %d bytes", p.Size)
		}
	})
	if !found {
		t.Errorf("partition sized-1 not described: %+v", dirs)
	}
}

func TestListOffsetsMaxTimestamp(t *testing.T) {
	b := testenv.StartBroker(t)
	adm, _ := newAdmin(t, b.Addr)
	ctx := context.Background()
	createTopic(t, b.Addr, "times", 1, nil)
	stamps := []int64{5000, 9000, 7000, 8000}
	produceSized(t, b.Addr, "times", 0, len(stamps), func(i int) time.Time { return time.UnixMilli(stamps[i]) })
	listed, err := adm.ListMaxTimestampOffsets(ctx, "times")
	if err != nil {
		t.Fatal(err)
	}
	o, _ := listed.Lookup("times", 0)
	if o.Err != nil || o.Offset != 1 || o.Timestamp != 9000 {
		t.Errorf("max timestamp offset: %+v, want offset 1 at 9000", o)
	}
}
