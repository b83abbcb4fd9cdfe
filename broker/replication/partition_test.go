package replication_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/partition"
	"github.com/tributary-io/tributary/broker/replication"
	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/recordbatch/rbtest"
)

// The facade over a partition with one replica: Lookup refuses what this
// broker does not lead, readers see only the flushed end, and WaitAcked
// (acks=all) returns once the batch is flushed, after which it is read.
func TestPartitionFacadeOneReplica(t *testing.T) {
	dir := t.TempDir()
	meta, err := cluster.OpenStandalone(dir, cluster.Broker{ID: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer meta.Close()
	// Flushed only when asked: what is appended stays above the flushed
	// end until WaitAcked asks for the flush.
	table := partition.New(partition.Config{Dir: dir, Base: log.Config{IntervalFlush: true, FlushInterval: time.Hour, RetentionCheckInterval: time.Hour}, Current: meta.Topic})
	defer table.CloseAll()
	rs := replication.New(replication.Deps{Self: 1, Meta: meta, Logs: table, DataDir: dir})
	top, err := meta.CreateTopic(context.Background(), "facade", 1, nil)
	if err != nil {
		t.Fatal(err)
	}

	if _, code := rs.Lookup(top, 1); code != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("partition 1 of a one-partition topic: code %d, want UNKNOWN_TOPIC_OR_PARTITION", code)
	}
	other := top
	other.Leaders = []int32{2}
	if _, code := rs.Lookup(other, 0); code != kerr.NotLeaderForPartition.Code {
		t.Errorf("a partition broker 2 leads: code %d, want NOT_LEADER_FOR_PARTITION", code)
	}

	part, code := rs.Lookup(top, 0)
	if code != 0 {
		t.Fatalf("lookup: code %d", code)
	}
	if code := part.Writable(-1); code != 0 {
		t.Fatalf("writable with acks=all: code %d", code)
	}
	batch := rbtest.Batch(rbtest.Record(0, nil, []byte("a")), 1, 0)
	res, code, err := part.Append([][]byte{batch}, replication.AppendOptions{})
	if err != nil || code != 0 {
		t.Fatalf("append: %v (code %d)", err, code)
	}
	if hw, code := part.HighWatermark(); code != 0 || hw != 0 {
		t.Errorf("before the flush: high watermark %d (code %d), want 0: readers see the flushed end only", hw, code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if code, err := part.WaitAcked(ctx, res.LastOffset); err != nil || code != 0 {
		t.Fatalf("acks=all: %v (code %d)", err, code)
	}
	hw, code := part.HighWatermark()
	if code != 0 || hw != res.LastOffset+1 {
		t.Fatalf("after the flush: high watermark %d (code %d), want %d", hw, code, res.LastOffset+1)
	}
	if part.HighWatermarkPending(hw) {
		t.Error("a partition with one replica has no high watermark to wait for")
	}
	if epoch, code := part.LeaderEpoch(); epoch != -1 || code != 0 {
		t.Errorf("leader epoch of a partition with one replica: %d (code %d), want -1", epoch, code)
	}
	bound, code := part.ReadBound(-1, 0)
	if code != 0 || bound.HighWatermark != hw {
		t.Fatalf("read bound: %+v (code %d)", bound, code)
	}
	s, err := part.Read(0, 1<<20, bound.End)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	if s.Size != int64(len(batch)) {
		t.Errorf("read %d bytes, want the batch's %d", s.Size, len(batch))
	}
}
