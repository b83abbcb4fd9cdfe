package partition

import (
	"testing"
	"time"

	"github.com/tributary-io/tributary/cluster"
)

// OpenTogether of more new partitions than the descriptor budget keeps
// open returns, and each partition then takes its write. The logs it
// opened first are parked to make room for the next before anything is
// written to them; a new log's release waited for a directory fsync that
// only a flush with data does, so those parked logs never gave their
// descriptors back and the openers after them waited for ever.
func TestOpenTogetherPastTheBudget(t *testing.T) {
	const parts = 200
	ps := New(Config{Dir: t.TempDir(), Base: testLogConfig, FDBudget: 30, MaxOpen: 10 * parts}) // 10 logs unparked
	defer ps.CloseAll()
	topic := cluster.Topic{Name: "new", ID: cluster.NewTopicID(), Leaders: make([]int32, parts)}
	want := make([]Want, parts)
	for p := range want {
		want[p] = Want{Topic: topic, Partition: int32(p)}
	}
	done := make(chan struct{})
	go func() {
		ps.OpenTogether(want)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("OpenTogether of 200 new partitions past a budget of 10 logs never returned")
	}
	for p := range int32(parts) {
		if !ps.IsOpen(topic.Name, p) {
			t.Fatalf("partition %d not open after OpenTogether", p)
		}
	}
	for p := range int32(parts) {
		l, err := ps.Get(topic, p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(oneRecord()); err != nil {
			t.Fatalf("partition %d: %v", p, err)
		}
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
		if end := l.LogEndOffset(); end != 1 {
			t.Fatalf("partition %d ends at %d, want 1", p, end)
		}
	}
}
