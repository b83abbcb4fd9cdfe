package broker

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/cluster"
)

// A leader restarted within its leader epoch (the controller did not see
// it go) may have lost records its follower copied unflushed at the same
// offsets: it takes no append until every in-sync follower has fetched
// within its log end, so a follower that was ahead truncates first rather
// than keep records the leader then writes differently at those offsets.
func TestRestartedLeaderWaitsForFollowersBeforeAppends(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	l, _, err := log.Open(t.TempDir(), log.Config{IntervalFlush: true, FlushInterval: time.Hour, RetentionCheckInterval: time.Hour}, logger)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// The run before the restart led epoch 3 and kept 2 records.
	if err := l.AssignLeaderEpoch(3); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(encodeBatch(time.Now(), []InternalRecord{{Value: []byte("a")}, {Value: []byte("b")}})); err != nil {
		t.Fatal(err)
	}
	b := &Broker{selfID: 1, logger: logger}
	b.replicas = &replicas{b: b, leading: map[partKey]*leaderState{}, learned: map[partKey]int64{}}
	top := cluster.Topic{Name: "restarted", Leaders: []int32{1}, Replicas: [][]int32{{1, 2}},
		States: []cluster.PartitionState{{Version: 1, Leader: 1, LeaderEpoch: 3, ISR: []int32{1, 2}}}}

	if code := b.leadForAppend(top, 0, l); code != kerr.NotEnoughReplicas.Code {
		t.Fatalf("append before the follower fetched: code %d, want NOT_ENOUGH_REPLICAS", code)
	}
	// The follower holds 5 records, 3 of them lost here: its fetch is
	// past the log end and does not count.
	if _, err := b.replicas.followerFetched(top, 0, l, 2, 5); err != nil {
		t.Fatal(err)
	}
	if code := b.leadForAppend(top, 0, l); code != kerr.NotEnoughReplicas.Code {
		t.Fatalf("append after a fetch past the log end: code %d, want NOT_ENOUGH_REPLICAS", code)
	}
	// Truncated by leader epoch, it fetches from this log's end.
	if _, err := b.replicas.followerFetched(top, 0, l, 2, 2); err != nil {
		t.Fatal(err)
	}
	if code := b.leadForAppend(top, 0, l); code != 0 {
		t.Fatalf("append after the follower fetched within the log: code %d", code)
	}

	// A leader in a new epoch appends at once.
	top.States[0].LeaderEpoch = 4
	if code := b.leadForAppend(top, 0, l); code != 0 {
		t.Fatalf("append in a new epoch: code %d", code)
	}
}
