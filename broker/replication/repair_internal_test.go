package replication

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/cluster"
)

// The rules of a leader with a repair pending: refused
// (NOT_LEADER_OR_FOLLOWER) while it tries to step down; served with the gap
// once it could not, in that epoch and with that ISR; tried again when the
// ISR grows or the epoch changes; served normally once cut back.
func TestDamagedLeaderRules(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	l, _, err := log.Open(t.TempDir(), log.Config{IntervalFlush: true, FlushInterval: time.Hour, RetentionCheckInterval: time.Hour}, logger)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// No cluster metadata: a step-down always fails.
	rp := NewRepair(1, nil, logger, nil)
	rs := &Manager{env: newEnv(Deps{Self: 1, Logger: logger, Repair: rp}), leading: map[partKey]*leaderState{}, learned: map[partKey]int64{}}
	top := func(epoch int32, isr ...int32) cluster.Topic {
		return cluster.Topic{Name: "damaged", Leaders: []int32{1}, Replicas: [][]int32{{1, 2, 3}},
			States: []cluster.PartitionState{{Version: 1, Leader: 1, LeaderEpoch: epoch, ISR: isr}}}
	}
	key := partKey{"damaged", 0}
	settled := func() {
		t.Helper()
		for range 1000 {
			rp.mu.Lock()
			_, stepping := rp.refusing[key]
			rp.mu.Unlock()
			if !stepping {
				return
			}
			time.Sleep(time.Millisecond)
		}
		t.Fatal("the step-down never ended")
	}
	serves := func(tp cluster.Topic) bool {
		_, _, err := rs.leader(tp, 0, l)
		return err == nil
	}

	if !serves(top(3, 1)) {
		t.Fatal("a leader without damage is refused")
	}
	rp.setPending(key)
	if serves(top(3, 1)) {
		t.Fatal("a damaged leader served while stepping down")
	}
	settled()
	if !serves(top(3, 1)) {
		t.Fatal("a leader that could not step down serves nothing")
	}
	if serves(top(3, 1, 2)) {
		t.Fatal("the ISR grew, and the leader did not try to step down again")
	}
	settled()
	if serves(top(4, 1)) {
		t.Fatal("a new leader epoch, and the leader did not try to step down again")
	}
	settled()
	if !rp.repairBeforeFollowing(key, l) || !serves(top(4, 1)) || rp.any.Load() {
		t.Fatal("after the cut back the leader is still refused")
	}
}
