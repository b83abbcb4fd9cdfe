package mirror_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testenv"
	"github.com/tributary-io/tributary/mirror"
)

// A source consumer group's committed offsets are written into the target,
// translated: the target topic also holds 50 records of its own per
// partition before the copies, so the same record has another offset
// there. A consumer of the group that moves to the target starts with
// exactly the first record it had not committed.
func TestMirrorTranslatesGroupOffsets(t *testing.T) {
	const topic, partitions, perPart, own = "orders", 3, 300, 50
	needServices(t)
	src := testenv.StartBroker(t)
	dst := testenv.StartBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	createTopic(t, []string{src.Addr}, topic, partitions)
	createTopic(t, []string{dst.Addr}, topic, partitions)
	produce(t, []string{dst.Addr}, "analysis", topic, partitions, 0, own)
	produce(t, []string{src.Addr}, "dc1", topic, partitions, 0, perPart)

	// The application's consumers committed these in the source.
	committed := kadm.Offsets{}
	for p := range int32(partitions) {
		committed.AddOffset(topic, p, int64(100+10*p), -1)
	}
	sadm := kadm.NewClient(newClient(t, []string{src.Addr}))
	if resp, err := sadm.CommitOffsets(ctx, "app", committed); err != nil || resp.Error() != nil {
		t.Fatalf("committing in the source: %v %v", err, resp.Error())
	}

	_, stop := runMirror(t, mirror.Config{Sources: []mirror.Source{{Name: "dc1", Bootstrap: []string{src.Addr}}}, Target: []string{dst.Addr},
		Groups: "^app$", GroupSyncInterval: 300 * time.Millisecond})
	waitForCount(t, []string{dst.Addr}, topic, partitions*(perPart+own), time.Minute)
	tadm := kadm.NewClient(newClient(t, []string{dst.Addr}))
	testenv.Eventuallyf(t, time.Minute, func() (bool, string) {
		got, err := tadm.FetchOffsets(ctx, "app")
		if err != nil {
			return false, err.Error()
		}
		for p := range int32(partitions) {
			o, ok := got.Lookup(topic, p)
			if want := int64(own + 100 + 10*p); !ok || o.At != want {
				return false, fmt.Sprintf("target offset of partition %d: %d, want %d", p, o.At, want)
			}
		}
		return true, ""
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	// The application fails over: it reads from the translated offsets.
	cl := newClient(t, []string{dst.Addr}, kgo.ConsumerGroup("app"), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit())
	first := map[int32]origin{}
	for len(first) < partitions && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			if _, ok := first[r.Partition]; !ok {
				first[r.Partition] = parseOrigin(t, r)
			}
		})
	}
	for p := range int32(partitions) {
		if o := first[p]; o.cluster != "dc1" || o.partition != p || o.i != 100+10*int(p) {
			t.Fatalf("after failing over, partition %d starts with %+v, want dc1's record %d", p, o, 100+10*p)
		}
	}
}
