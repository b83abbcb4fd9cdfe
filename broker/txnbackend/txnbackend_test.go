package txnbackend

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/txn"
	"github.com/tributary-io/tributary/cluster"
	"github.com/tributary-io/tributary/internal/recordbatch"
)

// fakeMeta is a cluster view with at most the state topic.
type fakeMeta struct {
	state   *cluster.Topic
	brokers []cluster.Broker
}

func (m fakeMeta) Topic(name string) (cluster.Topic, bool) {
	if name != txn.StateTopic || m.state == nil {
		return cluster.Topic{}, false
	}
	return *m.state, true
}
func (m fakeMeta) Brokers() []cluster.Broker { return m.brokers }
func (m fakeMeta) Self() cluster.Broker      { return m.brokers[0] }

// An id is coordinated by its state partition's leader; before the topic
// exists by this broker, which creates it; with no live leader by nobody
// (its client retries FindCoordinator).
func TestCoordinatorIsTheStatePartitionsLeader(t *testing.T) {
	brokers := []cluster.Broker{{ID: 1}, {ID: 2}}
	tb := New(Config{Self: 1, Meta: fakeMeta{brokers: brokers}})
	if br, ok := tb.CoordinatorFor("any"); !ok || br.ID != 1 || tb.Refusal("any") != 0 {
		t.Fatalf("before the state topic: coordinator %v %v, refusal %d; want this broker", br, ok, tb.Refusal("any"))
	}

	state := cluster.Topic{Name: txn.StateTopic, Leaders: []int32{1, 2, -1}}
	tb = New(Config{Self: 1, Meta: fakeMeta{state: &state, brokers: brokers}})
	byLeader := map[int32]string{}
	for _, id := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"} {
		byLeader[state.Leaders[txn.PartitionFor(id, 3)]] = id
	}
	for leader, id := range byLeader {
		br, ok := tb.CoordinatorFor(id)
		switch {
		case leader < 0 && ok:
			t.Errorf("%q: partition without a leader, but coordinator %d", id, br.ID)
		case leader >= 0 && (!ok || br.ID != leader):
			t.Errorf("%q: coordinator %d %v, want the leader %d", id, br.ID, ok, leader)
		}
		if want := int16(0); leader != 1 {
			if got := tb.Refusal(id); got != kerr.NotCoordinator.Code {
				t.Errorf("%q led by %d: refusal %d, want NOT_COORDINATOR", id, leader, got)
			}
		} else if got := tb.Refusal(id); got != want {
			t.Errorf("%q led here: refusal %d", id, got)
		}
	}
	if got := tb.LedStatePartitions(); got != 1 {
		t.Errorf("leads %d state partitions, want 1", got)
	}
}

// The state topic keeps the partition count it was made with, whatever is
// configured since: placement depends on it.
func TestStatePartitionsKeepTheTopics(t *testing.T) {
	state := cluster.Topic{Name: txn.StateTopic, Leaders: make([]int32, 7)}
	for _, c := range []struct {
		meta       fakeMeta
		configured int32
		want       int32
	}{
		{fakeMeta{}, 0, DefaultStatePartitions},
		{fakeMeta{}, 3, 3},
		{fakeMeta{state: &state}, 3, 7},
	} {
		if got := StatePartitions(c.meta, c.configured); got != c.want {
			t.Errorf("StatePartitions(topic %v, %d) = %d, want %d", c.meta.state != nil, c.configured, got, c.want)
		}
	}
}

// A state batch is a valid record batch (the log assigns its base offset)
// whose records read back as written, tombstones included.
func TestStateBatchReadsBack(t *testing.T) {
	recs := []txn.Record{{Key: []byte("k1"), Value: []byte("v1")}, {Key: []byte("k2")}, {Key: []byte("k3"), Value: []byte("v3")}}
	b := stateBatch(recs, 1234)
	got, next, err := recordbatch.Walk(nil, b, 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if next != int64(len(recs)) || len(got) != len(recs) {
		t.Fatalf("walked %d records to offset %d, want %d", len(got), next, len(recs))
	}
	for i, r := range got {
		if !bytes.Equal(r.Key, recs[i].Key) || !bytes.Equal(r.Value, recs[i].Value) || (r.Value == nil) != (recs[i].Value == nil) {
			t.Errorf("record %d: %q=%q, want %q=%q", i, r.Key, r.Value, recs[i].Key, recs[i].Value)
		}
	}
}
